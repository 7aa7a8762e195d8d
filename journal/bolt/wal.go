package bolt

// The write-ahead log.
//
// A bbolt commit makes a write durable with two fdatasyncs (its pages,
// then its meta page), and a guarded call makes two writes. So a batch of
// writes is made durable by appending it to a log beside the file, synced
// once, and the bbolt transaction that holds the same writes stays open
// and is committed later, with many batches at once (a checkpoint,
// checkpoint.go). The log file is path + "-wal".
//
// A frame is one batch:
//
//	magic "TGW1" | payload length u32 | CRC-32C of the rest u32 |
//	log id u64 | LSN u64 | payload
//
// all big-endian. The payload is the batch's records (logRecord): each
// written step as stored, its events and whether it claimed. LSNs number
// the frames from the one after the LSN the file last applied (meta key
// log/applied), which a checkpoint writes in the transaction that commits
// the frames' writes. After a checkpoint the log starts again at offset 0:
// the frames left behind it have LSNs the file has applied, and a scan
// stops at the first frame that is not the next LSN, or is torn, or
// belongs to another journal (the log id, meta key log/id). The file is
// grown in zeroed chunks and never shrunk, so that a frame's fdatasync
// rarely has a new file size to write too.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/toolguard/toolguard/internal/durable"
	"github.com/toolguard/toolguard/journal"
)

const (
	frameMagic  = "TGW1"
	frameHeader = 4 + 4 + 4 + 8 + 8
	// logChunk is the step by which the log file grows.
	logChunk = 1 << 20
	// maxFrame bounds a frame's payload: maxBatch steps of at most
	// bbolt.MaxValueSize would not fit, but a frame that large fails its
	// batch (ErrUnavailable) rather than the process.
	maxFrame = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logPath names the log of the journal file path.
func logPath(path string) string { return path + "-wal" }

// logFile is the open log of a writable journal; only the committer uses
// it.
type logFile struct {
	f    *os.File
	id   uint64
	off  int64 // where the next frame goes
	size int64 // the file's size
	buf  []byte
}

// openLog opens the log of the journal file path, creating it; a new log's
// directory entry is made durable before any frame relies on it.
func openLog(path string, id uint64) (*logFile, error) {
	_, statErr := os.Stat(logPath(path))
	f, err := os.OpenFile(logPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && errors.Is(statErr, os.ErrNotExist) {
		err = durable.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	return &logFile{f: f, id: id, size: fi.Size()}, nil
}

// append writes one frame of payload with lsn at the log's end and syncs
// it: when append returns nil, the frame survives a crash.
func (l *logFile) append(lsn uint64, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("log frame of %d bytes", len(payload))
	}
	n := int64(frameHeader + len(payload))
	if l.off+n > l.size {
		if err := l.grow(l.off + n); err != nil {
			return err
		}
	}
	l.buf = appendFrame(l.buf[:0], l.id, lsn, payload)
	if _, err := l.f.WriteAt(l.buf, l.off); err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	l.off += n
	return nil
}

// grow extends the file with zeros to at least end, in whole chunks; the
// frame's own sync makes the new size durable.
func (l *logFile) grow(end int64) error {
	size := (end + logChunk - 1) / logChunk * logChunk
	zero := make([]byte, logChunk)
	for at := l.size; at < size; at += logChunk {
		if _, err := l.f.WriteAt(zero[:min(logChunk, size-at)], at); err != nil {
			return fmt.Errorf("grow log: %w", err)
		}
	}
	l.size = size
	return nil
}

// rewind starts the log again at offset 0, once a checkpoint has applied
// everything in it.
func (l *logFile) rewind() { l.off = 0 }

func (l *logFile) close() error { return l.f.Close() }

func appendFrame(dst []byte, id, lsn uint64, payload []byte) []byte {
	dst = append(dst, frameMagic...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint64(dst, lsn)
	dst = append(dst, payload...)
	binary.BigEndian.PutUint32(dst[at:], crc32.Checksum(dst[at+4:], castagnoli))
	return dst
}

// scanLog returns the payloads of the frames of the journal id that follow
// LSN applied, in order, reading the log at path from its start; a
// missing log has none.
func scanLog(path string, id, applied uint64) ([][]byte, error) {
	data, err := os.ReadFile(logPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	var frames [][]byte
	for off := 0; len(data)-off >= frameHeader; {
		h := data[off : off+frameHeader]
		n := int(binary.BigEndian.Uint32(h[4:]))
		if string(h[:4]) != frameMagic || n > len(data)-off-frameHeader ||
			binary.BigEndian.Uint64(h[12:]) != id || binary.BigEndian.Uint64(h[20:]) != applied+uint64(len(frames))+1 {
			break
		}
		body := data[off+12 : off+frameHeader+n]
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(h[8:]) {
			break // torn: the batch was never acknowledged
		}
		frames = append(frames, body[16:])
		off += frameHeader + n
	}
	return frames, nil
}

// logRecord is one written step of a batch, as the committer wrote it:
// enough to write it again, on the same file state, the same way
// (pending.write).
type logRecord struct {
	key     string
	data    []byte // the step record as stored
	event   journal.Event
	extra   []journal.Event
	claimed bool
}

// payloadSize is about the size of the frame payload of batch's writes
// (exact when each event was encoded by pending.write and none has extra
// events), so that the payload, which the log keeps until the checkpoint,
// is allocated once.
func payloadSize(batch []*request) int {
	n := 0
	for _, r := range batch {
		if p := r.pending; r.wrote && r.err == nil && p != nil {
			n += 3*binary.MaxVarintLen32 + len(p.step.Key) + len(p.data) + len(`{"e":}`) + len(p.eventJSON) + 1
		}
	}
	return n
}

// appendRecord encodes the write p: key, record and events as length-prefixed
// fields, then the claim flag. The events field is the JSON object
// {"e":event,"x":[extra...]}, its event as pending.write stored it.
func appendRecord(dst []byte, p *pending) ([]byte, error) {
	e := p.eventJSON
	if e == nil {
		var err error
		if e, err = json.Marshal(&p.event); err != nil {
			return dst, fmt.Errorf("encode log record: %w", err)
		}
	}
	var x []byte
	n := len(`{"e":}`) + len(e)
	if len(p.extra) > 0 {
		var err error
		if x, err = json.Marshal(p.extra); err != nil {
			return dst, fmt.Errorf("encode log record: %w", err)
		}
		n += len(`,"x":`) + len(x)
	}
	for _, f := range [][]byte{[]byte(p.step.Key), p.data} {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = append(append(dst, `{"e":`...), e...)
	if x != nil {
		dst = append(append(dst, `,"x":`...), x...)
	}
	dst = append(dst, '}')
	claimed := byte(0)
	if p.claimed {
		claimed = 1
	}
	return append(dst, claimed), nil
}

// readRecords decodes the records of a frame's payload.
func readRecords(payload []byte) ([]logRecord, error) {
	var out []logRecord
	r := bytes.NewReader(payload)
	field := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return nil, fmt.Errorf("%w: log record field: %v", journal.ErrCorrupt, err)
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	for r.Len() > 0 {
		var rec logRecord
		key, err := field()
		if err != nil {
			return nil, err
		}
		if rec.data, err = field(); err != nil {
			return nil, err
		}
		ev, err := field()
		if err != nil {
			return nil, err
		}
		var e struct {
			E journal.Event   `json:"e"`
			X []journal.Event `json:"x,omitempty"`
		}
		if err := json.Unmarshal(ev, &e); err != nil {
			return nil, fmt.Errorf("%w: log record events: %v", journal.ErrCorrupt, err)
		}
		c, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%w: log record claim: %v", journal.ErrCorrupt, err)
		}
		rec.key, rec.event, rec.extra, rec.claimed = string(key), e.E, e.X, c == 1
		out = append(out, rec)
	}
	return out, nil
}

// replay writes the records of payload again, in order, on the state they
// were first written on.
func (bk *buckets) replay(payload []byte) error {
	recs, err := readRecords(payload)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		old, ref, err := bk.loadStep(rec.key)
		if err != nil && !errors.Is(err, journal.ErrNotFound) {
			return fmt.Errorf("replay step %s: %w", rec.key, err)
		}
		s, err := unmarshalStep(rec.data)
		if err != nil {
			return fmt.Errorf("%w: replay step %s: %v", journal.ErrCorrupt, rec.key, err)
		}
		p := &pending{old: old, ref: ref, step: *s, data: rec.data, event: rec.event, extra: rec.extra, claimed: rec.claimed}
		if err := p.write(bk); err != nil {
			return fmt.Errorf("replay step %s: %w", rec.key, err)
		}
	}
	return nil
}
