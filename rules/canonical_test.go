package rules

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "field order", in: `{"b":1,"a":2,"c":3}`, want: `{"a":2,"b":1,"c":3}`},
		{name: "whitespace", in: " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\":{ } }\n", want: `{"a":[1,2],"b":{}}`},
		{name: "nested objects sorted", in: `{"z":{"y":1,"x":{"b":2,"a":1}},"a":[]}`, want: `{"a":[],"z":{"x":{"a":1,"b":2},"y":1}}`},
		{name: "arrays keep order", in: `[3,1,2,{"b":1,"a":0}]`, want: `[3,1,2,{"a":0,"b":1}]`},
		{name: "literals", in: `[true,false,null]`, want: `[true,false,null]`},
		{name: "integer forms", in: `[1.0,1e0,1.00,10e-1,0.1e1,1E+0]`, want: `[1,1,1,1,1,1]`},
		{name: "negative zero", in: `[-0,-0.0,0e5,-0e-5,0.000]`, want: `[0,0,0,0,0]`},
		{name: "large integers exact", in: `[9007199254740993,18446744073709551617,-123456789012345678901]`, want: `[9007199254740993,18446744073709551617,-123456789012345678901]`},
		{name: "exponent thresholds", in: `[1e20,1e21,123e18,1e-6,1e-7,1.5e-7,0.00012]`, want: `[100000000000000000000,1e+21,123000000000000000000,0.000001,1e-7,1.5e-7,0.00012]`},
		{name: "fractions", in: `[1.50,-2.25e1,3.14159,100.001]`, want: `[1.5,-22.5,3.14159,100.001]`},
		{name: "huge exponents", in: `[1e400,-2.5e-400,1e99999999999999999999]`, want: `[1e+400,-2.5e-400,1e+99999999999999999999]`},
		{name: "unicode escapes decoded", in: `"caf\u00e9 \u20ac \ud83d\ude00"`, want: `"café € 😀"`},
		{name: "short escapes", in: `"\/\b\f\n\r\t\"\\"`, want: `"/\b\f\n\r\t\"\\"`},
		{name: "control characters", in: `"\u0001\u001f\u007f"`, want: "\"\\u0001\\u001f\x7f\""},
		{name: "html not escaped", in: `"\u003c\u003e\u0026 \u2028"`, want: "\"<>& \u2028\""},
		{name: "lone surrogate", in: `"\ud800x"`, want: "\"\ufffdx\""},
		{name: "escaped keys sorted by value", in: `{"\u0062":1,"a":2}`, want: `{"a":2,"b":1}`},
		{name: "keys sort by utf-16", in: `{"\ue000":1,"\ud83d\ude00":2}`, want: "{\"\U0001f600\":2,\"\ue000\":1}"},
		{name: "empty containers", in: `[{},[],""]`, want: `[{},[],""]`},
		{name: "top-level scalar", in: ` 42 `, want: `42`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON(nil, []byte(tc.in))
			if err != nil {
				t.Fatalf("CanonicalJSON(%s) error = %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("CanonicalJSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			again, err := CanonicalJSON([]byte("prefix"), got)
			if err != nil || string(again) != "prefix"+tc.want {
				t.Errorf("CanonicalJSON(canonical) = %s, %v; want it unchanged", again, err)
			}
		})
	}
}

func TestCanonicalJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "empty", in: ``, want: "invalid JSON at offset 0: unexpected end of input, want a value"},
		{name: "missing value", in: `{"a":}`, want: "invalid JSON at offset 5: unexpected character '}', want a value"},
		// Regression: invalid UTF-8 became U+FFFD, so "\xff" and "\xfe"
		// gave one key to different intents.
		{name: "invalid utf-8", in: "\"a\xffb\"", want: "invalid JSON at offset 2: invalid UTF-8 in string"},
		{name: "missing colon", in: `{"a" 1}`, want: "invalid JSON at offset 5: unexpected character '1', want ':' after object key"},
		{name: "trailing comma", in: `[1,]`, want: "invalid JSON at offset 3: unexpected character ']', want a value"},
		{name: "trailing data", in: `{} {}`, want: "invalid JSON at offset 3: unexpected character '{' after top-level value"},
		{name: "duplicate key", in: `{"a":1,"b":2,"a":3}`, want: `invalid JSON at offset 13: duplicate key "a"`},
		{name: "duplicate key sorted", in: `{"a":1,"a":2}`, want: `invalid JSON at offset 7: duplicate key "a"`},
		{name: "duplicate key by escape", in: `{"a":1,"\u0061":2}`, want: `invalid JSON at offset 7: duplicate key "a"`},
		{name: "nested duplicate", in: `{"x":[{"k":1,"k":1}]}`, want: `invalid JSON at offset 13: duplicate key "k"`},
		{name: "leading zero", in: `01`, want: "invalid JSON at offset 0: invalid number: leading zero"},
		{name: "bare minus", in: `-`, want: "invalid JSON at offset 1: invalid number: want a digit"},
		{name: "fraction without digits", in: `1.`, want: "invalid JSON at offset 2: invalid number: want a digit after '.'"},
		{name: "exponent without digits", in: `1e+`, want: "invalid JSON at offset 3: invalid number: want a digit in exponent"},
		{name: "bad literal", in: `[tru]`, want: "invalid JSON at offset 1: invalid literal, want true"},
		{name: "unterminated string", in: `"abc`, want: "invalid JSON at offset 0: unterminated string"},
		{name: "raw control character", in: "\"a\nb\"", want: "invalid JSON at offset 2: control character 0x0a in string"},
		{name: "bad escape", in: `"\x"`, want: `invalid JSON at offset 1: invalid escape sequence \x`},
		{name: "bad unicode escape", in: `"\u12g4"`, want: `invalid JSON at offset 1: invalid \u escape`},
		{name: "single quotes", in: `{'a':1}`, want: "invalid JSON at offset 1: unexpected character '\\'', want an object key"},
		{name: "binary", in: "\x00", want: "invalid JSON at offset 0: unexpected byte 0x00, want a value"},
		{name: "too deep", in: strings.Repeat("[", maxDepth+1), want: "invalid JSON at offset 10000: nesting deeper than 10000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte("keep"), []byte(tc.in))
			if err == nil {
				t.Fatalf("CanonicalJSON(%q) = %s, want error %q", tc.in, got, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q, want %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidBody) {
				t.Errorf("error %v does not wrap ErrInvalidBody", err)
			}
			if string(got) != "keep" {
				t.Errorf("dst = %q, want it unchanged", got)
			}
		})
	}
}

func TestCanonicalForm(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "sorted keys", in: "b=2&a=1", want: `{"a":"1","b":"2"}`},
		{name: "reordered equal", in: "a=1&b=2", want: `{"a":"1","b":"2"}`},
		{name: "repeated keys keep order", in: "tag=z&x=1&tag=a&tag=m", want: `{"tag":["z","a","m"],"x":"1"}`},
		{name: "escapes and plus", in: "name=J%C3%B6rg+M%20x&q=a%2Bb%26c", want: `{"name":"Jörg M x","q":"a+b&c"}`},
		{name: "escaped key", in: "a%5Bb%5D=1", want: `{"a[b]":"1"}`},
		{name: "no value", in: "flag&x=", want: `{"flag":"","x":""}`},
		{name: "empty pairs skipped", in: "&a=1&&", want: `{"a":"1"}`},
		{name: "empty", in: "", want: `{}`},
		{name: "value with =", in: "a=b=c", want: `{"a":"b=c"}`},
		{name: "json special characters", in: `q=%22%5C%0A`, want: `{"q":"\"\\\n"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalForm(nil, tc.in)
			if err != nil {
				t.Fatalf("CanonicalForm(%q) error = %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("CanonicalForm(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
	// Regression: bytes that are not UTF-8 became U+FFFD, so x=%FF and
	// x=%FE (or two such keys) gave one key to different intents.
	for _, in := range []string{"x=%FF", "%FE=1", "a=1&x=%C3", "x=\xff"} {
		if _, err := CanonicalForm(nil, in); !errors.Is(err, ErrInvalidBody) || !strings.Contains(err.Error(), "invalid UTF-8") {
			t.Errorf("CanonicalForm(%q) error = %v, want invalid UTF-8 wrapping ErrInvalidBody", in, err)
		}
	}
	_, err := CanonicalForm(nil, "a=1&b=%4")
	if want := `invalid form body at offset 6: invalid escape "%4"`; err == nil || err.Error() != want || !errors.Is(err, ErrInvalidBody) {
		t.Errorf("CanonicalForm(bad escape) error = %v, want %q", err, want)
	}
}

func TestCanonicalBody(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    string
		wantErr                 string
	}{
		{name: "json", contentType: "application/json", body: `{"b":1,"a":2}`, want: `{"a":2,"b":1}`},
		{name: "json with charset", contentType: "Application/JSON; charset=utf-8", body: `[1]`, want: `[1]`},
		{name: "json suffix", contentType: "application/vnd.api+json", body: `{}`, want: `{}`},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: "b=1&a=2", want: `{"a":"2","b":"1"}`},
		{name: "sniffed json", contentType: "", body: "  \n{\"a\":1}", want: `{"a":1}`},
		{name: "sniffed json array", contentType: "", body: `[1,2]`, want: `[1,2]`},
		// Regression: curl -d sends JSON as a form, which was read as one
		// form key with an empty value, and keyed every field as null.
		{name: "json declared as form", contentType: "application/x-www-form-urlencoded", body: `{"client":"a","item":"z"}`,
			wantErr: "invalid body: the body is declared application/x-www-form-urlencoded but looks like JSON (curl -d sends that content type: send Content-Type: application/json)"},
		{name: "json array declared as form", contentType: "application/x-www-form-urlencoded; charset=utf-8", body: "\n [1]",
			wantErr: "invalid body: the body is declared application/x-www-form-urlencoded but looks like JSON (curl -d sends that content type: send Content-Type: application/json)"},
		{name: "form declared as json", contentType: "application/json", body: "client=a&item=z",
			wantErr: "invalid JSON at offset 0: unexpected character 'c', want a value"},
		{name: "untyped broken json", contentType: "", body: `{"a":`, wantErr: "invalid JSON at offset 5: unexpected end of input, want a value"},
		// A body of any other type is keyed by its bytes, never refused.
		{name: "json with a text type", contentType: "text/plain", body: `[1,2]`,
			want: `{"content_sha256":"49a64717d5d4cb19952e6eac2946415cf6879adacf9908e7d872332d32c6e684","content_type":"text/plain","size":5}`},
		{name: "empty body", contentType: "application/json", body: "", want: `null`},
		{name: "empty body form", contentType: "application/x-www-form-urlencoded", body: "", want: `null`},
		{name: "text", contentType: "text/plain; charset=UTF-8", body: "hello",
			want: `{"content_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","content_type":"text/plain; charset=UTF-8","size":5}`},
		{name: "untyped text", contentType: "", body: "a=1",
			want: `{"content_sha256":"c22fea5d7428e5cf47ef6354c97c9223c95d6dcdc3e0d2300ff79056b1ff3d85","content_type":"","size":3}`},
		{name: "multipart", contentType: "multipart/form-data; boundary=x", body: "--x", wantErr: `invalid body: multipart body has no parts`},
		{name: "json declared but broken", contentType: "application/json", body: "{", wantErr: "invalid JSON at offset 1: unexpected end of input, want an object key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalBody(nil, tc.contentType, []byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrInvalidBody) {
					t.Errorf("CanonicalBody() error = %v, want %q wrapping ErrInvalidBody", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("CanonicalBody() = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestSetBodyField(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    string
	}{
		{name: "json insert", contentType: "application/json", body: `{"amount": 5}`, want: `{"idempotency_key":"K","amount": 5}`},
		{name: "json replace", contentType: "application/json", body: `{"a":1, "idempotency_key" : "old", "b":2}`, want: `{"a":1, "idempotency_key" : "K", "b":2}`},
		{name: "json replace non-string", contentType: "application/json", body: `{"idempotency_key":null}`, want: `{"idempotency_key":"K"}`},
		{name: "json nested same name untouched", contentType: "application/json", body: `{"x":{"idempotency_key":"n"}}`, want: `{"idempotency_key":"K","x":{"idempotency_key":"n"}}`},
		{name: "json empty object", contentType: "application/json", body: ` { } `, want: ` {"idempotency_key":"K" } `},
		{name: "empty body", contentType: "application/json", body: ``, want: `{"idempotency_key":"K"}`},
		{name: "form append", contentType: "application/x-www-form-urlencoded", body: `a=1&b=2`, want: `a=1&b=2&idempotency_key=K`},
		{name: "form replace and dedupe", contentType: "application/x-www-form-urlencoded", body: `idempotency_key=x&a=1&idempotency%5Fkey=y`, want: `idempotency_key=K&a=1`},
		{name: "form empty", contentType: "application/x-www-form-urlencoded", body: ``, want: `idempotency_key=K`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetBodyField(tc.contentType, []byte(tc.body), "idempotency_key", "K")
			if err != nil || string(got) != tc.want {
				t.Errorf("SetBodyField() = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := SetBodyField("application/json", []byte(`[1]`), "k", "v"); !errors.Is(err, ErrInvalidBody) {
		t.Errorf("SetBodyField(array) error = %v, want ErrInvalidBody", err)
	}
	got, _ := SetBodyField("application/json", []byte(`{"a":1}`), "k", "a\"b<")
	if want := `{"k":"a\"b<","a":1}`; string(got) != want {
		t.Errorf("SetBodyField(escaping) = %s, want %s", got, want)
	}
}

// Regression (found by FuzzCanonicalJSON): two lone low surrogates were
// decoded as one pair, so "\udc00\udc00" and "\udc00" canonicalized alike.
func TestLoneLowSurrogates(t *testing.T) {
	got, err := CanonicalJSON(nil, []byte(`"\udC00\udC00"`))
	if err != nil || string(got) != "\"\ufffd\ufffd\"" {
		t.Fatalf("CanonicalJSON = %q, %v; want two U+FFFD", got, err)
	}
}
