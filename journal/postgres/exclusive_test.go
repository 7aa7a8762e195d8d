package postgres

import (
	"context"
	"testing"
)

// While one replica runs a named pass, another replica's attempt does not
// run; afterwards it does, and other names are independent.
func TestRunExclusiveOnceAcrossReplicas(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{DSN: a.opts.DSN, Schema: a.Schema()})
	ctx := context.Background()
	ran, err := a.RunExclusive(ctx, "resolver", func(ctx context.Context) error {
		other, err := b.RunExclusive(ctx, "resolver", func(context.Context) error {
			t.Error("replica b ran the pass replica a is running")
			return nil
		})
		if err != nil || other {
			t.Errorf("b.RunExclusive during a's pass = %v, %v; want false, nil", other, err)
		}
		sweep, err := b.RunExclusive(ctx, "sweep", func(context.Context) error { return nil })
		if err != nil || !sweep {
			t.Errorf("another name during a's pass = %v, %v; want it to run", sweep, err)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("a.RunExclusive = %v, %v", ran, err)
	}
	ran, err = b.RunExclusive(ctx, "resolver", func(context.Context) error { return nil })
	if err != nil || !ran {
		t.Fatalf("b.RunExclusive after a's pass = %v, %v; want it to run", ran, err)
	}
}
