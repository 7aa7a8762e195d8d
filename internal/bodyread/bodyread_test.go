package bodyread

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/iotest"
	"time"
)

func TestClockDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := &Clock{Timeout: 10 * time.Second, MinRate: 1000, Start: start}
	tests := []struct {
		name string
		got  int64
		now  time.Duration // since start
		want time.Duration // since start
	}{
		{name: "first read", got: 0, now: 0, want: 10 * time.Second},
		{name: "allowance used up", got: 0, now: 5 * time.Second, want: 10 * time.Second},
		{name: "bytes extend the allowance", got: 5000, now: 9 * time.Second, want: 15 * time.Second},
		{name: "idle bound", got: 1 << 30, now: 20 * time.Second, want: 30 * time.Second},
	}
	for _, tc := range tests {
		k.got = tc.got
		if got := k.deadline(start.Add(tc.now)); !got.Equal(start.Add(tc.want)) {
			t.Errorf("%s: deadline %v, want %v", tc.name, got.Sub(start), tc.want)
		}
	}
	k.MinRate = -1
	if got := k.deadline(start.Add(time.Hour)); !got.Equal(start.Add(time.Hour + 10*time.Second)) {
		t.Errorf("no minimum rate: deadline %v", got.Sub(start))
	}
}

// deadlines records the read deadlines a Clock sets.
type deadlines struct {
	set []time.Time
	err error // what SetReadDeadline returns
}

func (d *deadlines) SetReadDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return d.err
}

func TestClockRead(t *testing.T) {
	timeout := &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name        string
		conn        bool  // the Clock has a connection
		setErr      error // SetReadDeadline's answer
		readErr     error // the reader's
		wantTimeout bool
	}{
		{name: "bytes", conn: true},
		{name: "EOF", conn: true, readErr: io.EOF},
		{name: "past the deadline", conn: true, readErr: timeout, wantTimeout: true},
		{name: "other error", conn: true, readErr: errors.New("reset")},
		{name: "no connection", readErr: timeout},
		{name: "deadline not set", conn: true, setErr: errors.New("unsupported"), readErr: timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &deadlines{err: tc.setErr}
			k := &Clock{Timeout: time.Second, Start: time.Now()}
			if tc.conn {
				k.Conn = d
			}
			var r io.Reader = bytes.NewReader([]byte("abc"))
			if tc.readErr != nil {
				r = iotest.ErrReader(tc.readErr)
			}
			_, err := k.Read(r, make([]byte, 8))
			if got := errors.Is(err, ErrTimeout); got != tc.wantTimeout {
				t.Errorf("Read error %v: timeout %v, want %v", err, got, tc.wantTimeout)
			}
			if tc.readErr != nil && !errors.Is(err, tc.readErr) {
				t.Errorf("Read error %v does not wrap the reader's %v", err, tc.readErr)
			}
			if got := len(d.set); got != map[bool]int{true: 1}[tc.conn] {
				t.Errorf("%d deadlines set, want one per read on a connection", got)
			}
		})
	}
}

// A read that outlasts its deadline on a real connection fails with
// ErrTimeout.
func TestClockReadOnAConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client.Write([]byte("ab"))
	k := &Clock{Conn: server, Timeout: 50 * time.Millisecond, MinRate: 1 << 20, Start: time.Now()}
	p := make([]byte, 8)
	if n, err := k.Read(server, p); err != nil || n != 2 {
		t.Fatalf("first read = %d, %v; want the 2 bytes sent", n, err)
	}
	if _, err := k.Read(server, p); !errors.Is(err, ErrTimeout) {
		t.Fatalf("idle read = %v, want ErrTimeout", err)
	}
}

func TestClockStop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		read  bool // a read set a deadline first
		whole bool
		want  []time.Time // the deadlines Stop sets
	}{
		{name: "whole body", read: true, whole: true, want: []time.Time{{}}},
		{name: "whole body, no deadline set", whole: true},
		{name: "refused body", read: true, want: []time.Time{time.Unix(1, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &deadlines{}
			k := &Clock{Conn: d, Timeout: time.Second, Start: time.Now()}
			if tc.read {
				k.Read(bytes.NewReader([]byte("x")), make([]byte, 1))
				d.set = nil
			}
			k.Stop(tc.whole)
			if len(d.set) != len(tc.want) {
				t.Fatalf("Stop set %v, want %v", d.set, tc.want)
			}
			for i := range d.set {
				if !d.set[i].Equal(tc.want[i]) {
					t.Errorf("Stop set %v, want %v", d.set, tc.want)
				}
			}
		})
	}
	(&Clock{}).Stop(false) // no connection: nothing to do
}

func TestJoin(t *testing.T) {
	last := []byte("ef")
	for _, tc := range []struct {
		name     string
		filled   [][]byte
		want     string
		wantLast bool // Join returns last itself
	}{
		{name: "one chunk", want: "ef", wantLast: true},
		{name: "chunks", filled: [][]byte{[]byte("ab"), []byte("cd")}, want: "abcdef"},
		{name: "empty chunks", filled: [][]byte{{}, []byte("cd")}, want: "cdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Join(tc.filled, last, int64(len(tc.want)))
			if string(got) != tc.want {
				t.Errorf("Join = %q, want %q", got, tc.want)
			}
			if same := &got[0] == &last[0]; same != tc.wantLast {
				t.Errorf("Join returned last itself: %v, want %v", same, tc.wantLast)
			}
			if cap(got) != len(tc.want) && !tc.wantLast {
				t.Errorf("Join allocated %d bytes for %d", cap(got), len(tc.want))
			}
		})
	}
}
