package rules

import (
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    Rate
		wantErr bool
	}{
		{in: "10/s", want: Rate{10, time.Second}},
		{in: "100/m", want: Rate{100, time.Minute}},
		{in: "5/h", want: Rate{5, time.Hour}},
		{in: "0/s", wantErr: true},
		{in: "10", wantErr: true},
		{in: "10/d", wantErr: true},
		{in: "x/s", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRate(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseRate(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
