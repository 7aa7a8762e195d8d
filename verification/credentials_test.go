package verification

import (
	"net/http"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

func TestCredentials(t *testing.T) {
	api := &rules.API{Name: "test", Credential: "Authorization"}
	var c Credentials
	c.Lend("mac-1", api, http.Header{"Authorization": {"x"}}) // nobody waits: a no-op
	a, b, other := c.Wait("mac-1"), c.Wait("mac-1"), c.Wait("mac-2")
	c.Forget("mac-1", b)
	c.Forget("mac-1", b) // twice: no effect
	c.Lend("", api, http.Header{"Authorization": {"x"}})
	c.Lend("mac-1", api, http.Header{"Authorization": {"Bearer 1"}, "Cookie": {"c"}})
	select {
	case h := <-a:
		if h.Get("Authorization") != "Bearer 1" || h.Get("Cookie") != "" {
			t.Fatalf("lent %v, want the API's credential header only", h)
		}
	default:
		t.Fatal("the waiting registration got nothing")
	}
	select {
	case <-b:
		t.Fatal("a forgotten registration was lent a credential")
	case <-other:
		t.Fatal("another caller's registration was lent the credential")
	default:
	}
	if n := c.n.Load(); n != 1 {
		t.Fatalf("%d registrations counted, want 1 (mac-2's)", n)
	}
}
