package observe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
)

// Tee has the agent read resp's body unchanged as it streams, keeping
// its first max bytes and hashing all of it, and ends o (Ended) when the
// body has been read to its end, has failed, or is closed.
func (o *Observation) Tee(resp *http.Response, max int64) {
	resp.Body = &tee{rc: resp.Body, o: o, resp: resp, max: max, h: sha256.New()}
}

// tee is an observed answer's body on its way to the agent.
type tee struct {
	rc   io.ReadCloser
	o    *Observation
	resp *http.Response
	max  int64
	head []byte
	h    hash.Hash
	eof  bool
}

func (b *tee) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.h.Write(p[:n])
	if keep := min(int64(n), b.max-int64(len(b.head))); keep > 0 {
		b.head = append(b.head, p[:keep]...)
	}
	if errors.Is(err, io.EOF) {
		b.eof = true
		b.end(nil)
	} else if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *tee) Close() error {
	err := b.rc.Close()
	b.end(nil)
	return err
}

// end ends the observation with what was read; a body that broke (err)
// or was not read to its end is recorded as the answer so far, and its
// hash left out.
func (b *tee) end(err error) {
	a := Attempt{Resp: b.resp, Head: b.head, Err: err, Sent: true}
	sum := ""
	if b.eof {
		sum = hex.EncodeToString(b.h.Sum(nil))
	}
	b.o.Ended(a, sum)
}
