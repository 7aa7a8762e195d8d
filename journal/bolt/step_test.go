package bolt

import (
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// A record written before steps kept a key summary decodes with none, and
// a step without one is written without the member.
func TestStepRecordWithoutKeyFields(t *testing.T) {
	old := `{"schema":2,"key":"k","api":"billing","route":"charge","status":"prepared","hold":"awaiting_approval","attempt":0,` +
		`"epoch":1,"fence":1,"revision":1,"method":"POST","host":"h","path":"/p","body_hash":"b","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`
	st, err := unmarshalStep([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if st.KeyFields != nil || st.Hold != journal.HoldAwaitingApproval {
		t.Errorf("decoded %+v, want no key fields and the hold kept", st)
	}
	b, err := marshalStep(st)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != old {
		t.Errorf("re-encoded\n%s\nwant\n%s", got, old)
	}
}
