package journal

import "testing"

func TestObservedReason(t *testing.T) {
	tests := []struct {
		name   string
		ev     Event
		want   Would
		wantOK bool
	}{
		{name: "replay", ev: Event{Type: EventObserved, Reason: ObservedReason(WouldReplay, "outcome stored; upstream answered 200 OK")},
			want: WouldReplay, wantOK: true},
		{name: "every name", ev: Event{Type: EventObserved, Reason: ObservedReason(WouldRefuseBodyTooLarge, "")},
			want: WouldRefuseBodyTooLarge, wantOK: true},
		{name: "another type", ev: Event{Type: EventCommitted, Reason: ObservedReason(WouldReplay, "x")}},
		{name: "unknown would", ev: Event{Type: EventObserved, Reason: "would dance: x"}},
		{name: "no prefix", ev: Event{Type: EventObserved, Reason: "replay: x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.ev.Would()
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Would() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestWouldNames(t *testing.T) {
	for _, n := range WouldNames() {
		var w Would
		if err := w.UnmarshalText([]byte(n)); err != nil || w.String() != n {
			t.Errorf("round trip of %q: %v, %v", n, w, err)
		}
	}
	if _, err := ParseWould("forwarded"); err == nil {
		t.Error(`ParseWould("forwarded") succeeded`)
	}
	if got := Would(0).String(); got != "would(0)" {
		t.Errorf("Would(0) = %q", got)
	}
	classes := map[Would]string{WouldReplay: "stopped", WouldWait: "stopped", WouldHoldApproval: "held", WouldHoldAmbiguous: "held",
		WouldRefuseInvalidBody: "refused", WouldRefusePayloadMismatch: "refused", WouldRefuseBodyTooLarge: "refused",
		WouldForward: "", WouldLookup: ""}
	for w, want := range classes {
		got := ""
		switch {
		case w.Stopped():
			got = "stopped"
		case w.Held():
			got = "held"
		case w.Refused():
			got = "refused"
		}
		if got != want {
			t.Errorf("%v is %q, want %q", w, got, want)
		}
	}
}
