package rules

import (
	"fmt"

	"testing"

	"github.com/toolguard/toolguard/policy"
)

func TestGuardMode(t *testing.T) {
	const routes = "api: a\nhosts: [a.example]\n%sroutes:\n  - {name: r, match: POST /r, effect: irreversible}\n"
	const tools = "api: t\nmcp: {}\n%stools:\n  - {name: x, effect: irreversible}\n"
	tests := []struct {
		name   string
		file   string
		global policy.Mode
		want   policy.Mode
		set    bool
	}{
		{name: "routes, none: global enforce", file: fmt.Sprintf(routes, ""), global: policy.ModeEnforce, want: policy.ModeEnforce},
		{name: "routes, none: global observe", file: fmt.Sprintf(routes, ""), global: policy.ModeObserve, want: policy.ModeObserve},
		{name: "routes observe over enforce", file: fmt.Sprintf(routes, "guard: {mode: observe}\n"), global: policy.ModeEnforce, want: policy.ModeObserve, set: true},
		{name: "routes enforce over observe", file: fmt.Sprintf(routes, "guard: {mode: Enforce}\n"), global: policy.ModeObserve, want: policy.ModeEnforce, set: true},
		{name: "tools observe", file: fmt.Sprintf(tools, "guard:\n  mode: observe\n"), global: policy.ModeEnforce, want: policy.ModeObserve, set: true},
		{name: "tools, none", file: fmt.Sprintf(tools, ""), global: policy.ModeObserve, want: policy.ModeObserve},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, err := Parse("f.yaml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := api.GuardMode(tc.global); got != tc.want {
				t.Errorf("GuardMode(%v) = %v, want %v", tc.global, got, tc.want)
			}
			if got := api.Mode != nil; got != tc.set {
				t.Errorf("Mode set = %v, want %v", got, tc.set)
			}
		})
	}
	var none *API
	if got := none.GuardMode(policy.ModeObserve); got != policy.ModeObserve {
		t.Errorf("(*API)(nil).GuardMode(observe) = %v", got)
	}
}

func TestGuardModeErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{name: "tools, bad mode", file: "api: t\nmcp: {}\nguard: {mode: off}\ntools:\n  - {name: x, effect: irreversible}\n",
			want: `f.yaml:3:15: guard.mode: unknown mode "off" (want enforce or observe)`},
		{name: "not a mapping", file: "api: a\nhosts: [a.example]\nguard: observe\nroutes:\n  - {name: r, match: POST /r, effect: irreversible}\n",
			want: `f.yaml:3:8: guard: want a mapping (got string "observe")`},
		{name: "mode not a string", file: "api: a\nhosts: [a.example]\nguard: {mode: [observe]}\nroutes:\n  - {name: r, match: POST /r, effect: irreversible}\n",
			want: `f.yaml:3:15: guard.mode: want a string (got a list)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.file))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse() error = %v, want %s", err, tc.want)
			}
		})
	}
}
