package headerfilter

import (
	"net/http"
	"reflect"
	"testing"
)

func TestIsToolguard(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		want bool
	}{
		{name: "canonical", key: "Toolguard-Key", want: true},
		{name: "lower case", key: "toolguard-outcome", want: true},
		{name: "prefix only", key: "Toolguard-", want: true},
		{name: "no dash", key: "Toolguard", want: false},
		{name: "short", key: "X", want: false},
		{name: "other", key: "X-Toolguard-Key", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsToolguard(tc.key); got != tc.want {
				t.Errorf("IsToolguard(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

func TestStripToolguard(t *testing.T) {
	h := http.Header{"Toolguard-Key": {"k"}, "toolguard-lower": {"x"}, "X-Kept": {"y"}}
	StripToolguard(h)
	if want := (http.Header{"X-Kept": {"y"}}); !reflect.DeepEqual(h, want) {
		t.Errorf("after StripToolguard: %v, want %v", h, want)
	}
}

func TestStorable(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   http.Header
		want http.Header
	}{
		{name: "kept", in: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1", "r2"}},
			want: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1", "r2"}}},
		{name: "one client's state", in: http.Header{"Set-Cookie": {"a=b"}, "Set-Cookie2": {"c"}, "Authorization": {"Bearer k"}, "Proxy-Authenticate": {"Basic"}},
			want: http.Header{}},
		{name: "Www-Authenticate is stored", in: http.Header{"Www-Authenticate": {"Bearer"}},
			want: http.Header{"Www-Authenticate": {"Bearer"}}},
		{name: "encoding and date", in: http.Header{"Content-Length": {"3"}, "Date": {"today"}, "Transfer-Encoding": {"chunked"}},
			want: http.Header{}},
		{name: "hop by hop", in: http.Header{"Connection": {"close"}, "Keep-Alive": {"5"}, "Upgrade": {"h2c"}, "Trailer": {"X"}},
			want: http.Header{}},
		{name: "toolguard's", in: http.Header{"Toolguard-Outcome": {"replayed"}, "toolguard-approved": {"yes"}},
			want: http.Header{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.Clone()
			got := Storable(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Storable(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, in) {
				t.Errorf("Storable changed its input: %v, was %v", tc.in, in)
			}
		})
	}
}

func TestStorableCopiesValues(t *testing.T) {
	in := http.Header{"X-A": {"1"}}
	out := Storable(in)
	out["X-A"][0] = "2"
	if in.Get("X-A") != "1" {
		t.Error("Storable shares its values with its input")
	}
}

func TestOutbound(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   http.Header
		want http.Header
	}{
		{name: "kept", in: http.Header{"Authorization": {"Bearer k"}, "Content-Type": {"application/json"}},
			want: http.Header{"Authorization": {"Bearer k"}, "Content-Type": {"application/json"}}},
		{name: "toolguard's", in: http.Header{"Toolguard-Workflow": {"wf"}, "toolguard-key": {"k"}, "X-Kept": {"y"}},
			want: http.Header{"X-Kept": {"y"}}},
		{name: "hop by hop", in: http.Header{"Proxy-Authorization": {"Basic x"}, "Proxy-Connection": {"keep-alive"}, "Te": {"trailers"}, "X-Kept": {"y"}},
			want: http.Header{"X-Kept": {"y"}}},
		{name: "named by Connection", in: http.Header{"Connection": {"X-Secret, X-Other"}, "X-Secret": {"s"}, "X-Other": {"o"}, "X-Kept": {"y"}},
			want: http.Header{"X-Kept": {"y"}}},
		{name: "identity encoding", in: http.Header{"Accept-Encoding": {"gzip"}, "Accept": {"*/*"}},
			want: http.Header{"Accept": {"*/*"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.Clone()
			if got := Outbound(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Outbound(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, in) {
				t.Errorf("Outbound changed its input: %v, was %v", tc.in, in)
			}
		})
	}
}
