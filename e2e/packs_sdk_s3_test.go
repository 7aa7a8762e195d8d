package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// s3Mock is gofakes3, an in-memory S3, behind TLS: it counts the requests
// that reach it by operation.
type s3Mock struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int // s3Operation → requests
}

func newS3Mock(t *testing.T) *s3Mock {
	m := &s3Mock{seen: map[string]int{}}
	fake := gofakes3.New(s3mem.New()).Server()
	m.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.seen[s3Operation(r)]++
		m.mu.Unlock()
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *s3Mock) host() string { return m.Listener.Addr().String() }

func (m *s3Mock) reached(r *http.Request) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[s3Operation(r)]
}

// writes is how many writes (PUT, POST, DELETE) reached the mock.
func (m *s3Mock) writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for op, c := range m.seen {
		if isWriteRoute(op) {
			n += c
		}
	}
	return n
}

// s3Operation names a request by method, path and the names of its query
// parameters, which say the operation (?uploads, ?delete, ?uploadId...).
func s3Operation(r *http.Request) string {
	var names []string
	for name := range r.URL.Query() {
		if !strings.HasPrefix(name, "x-id") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	op := r.Method + " " + r.URL.Path
	if len(names) > 0 {
		op += "?" + strings.Join(names, "&")
	}
	return op
}

// lastAnswer is an SDK's HTTP client that keeps the last answer, which
// aws-sdk-go-v2 does not return.
type lastAnswer struct {
	do   func(*http.Request) (*http.Response, error)
	mu   sync.Mutex
	last *http.Response
}

func (l *lastAnswer) Do(r *http.Request) (*http.Response, error) {
	resp, err := l.do(r)
	l.mu.Lock()
	l.last = resp
	l.mu.Unlock()
	return resp, err
}

func (l *lastAnswer) answer() *http.Response {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// s3Through is aws-sdk-go-v2's S3 client through toolguard p, path-style
// at the mock, with the SDK's standard retryer (3 attempts); transport, when
// set, sits between the SDK and toolguard.
func s3Through(t *testing.T, p *proc, mock *s3Mock, wrap func(http.RoundTripper) http.RoundTripper) (*s3.Client, *lastAnswer) {
	t.Helper()
	hc := p.client(t)
	if wrap != nil {
		hc.Transport = wrap(hc.Transport)
	}
	la := &lastAnswer{do: hc.Do}
	return s3.New(s3.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
		BaseEndpoint: aws.String(mock.URL),
		UsePathStyle: true,
		HTTPClient:   la,
	}), la
}

// s3Writes are aws-sdk-go-v2's writes: buckets, objects (a new one, a
// replaced one, a copy), deletes of one and of many, versioning, and a
// multipart upload.
func s3Writes(c *s3.Client, la *lastAnswer) []sdkWrite {
	const bucket = "refunds"
	w := func(name string, call func(context.Context) error) sdkWrite {
		return sdkWrite{name: name, call: func(ctx context.Context) (*http.Response, error) {
			err := call(ctx)
			return la.answer(), err
		}}
	}
	put := func(key, body string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
			return err
		}
	}
	var uploadID, partETag *string
	return []sdkWrite{
		w("CreateBucket", func(ctx context.Context) error {
			_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
			return err
		}),
		w("PutBucketVersioning", func(ctx context.Context) error {
			_, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
				VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
			return err
		}),
		w("PutObject", put("2024/order-77.json", `{"order":77,"amount":4200}`)),
		w("PutObject (old object)", put("2024/order-76.json", `{"order":76}`)),
		w("PutObject (replaces order-77)", put("2024/order-77.json", `{"order":77,"amount":4300}`)),
		w("CopyObject", func(ctx context.Context) error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("archive/order-77.json"),
				CopySource: aws.String(bucket + "/2024/order-77.json")})
			return err
		}),
		w("DeleteObject", func(ctx context.Context) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("2024/order-76.json")})
			return err
		}),
		w("DeleteObjects", func(ctx context.Context) error {
			_, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{
				Objects: []s3types.ObjectIdentifier{{Key: aws.String("tmp/a.json")}, {Key: aws.String("tmp/b.json")}}}})
			return err
		}),
		w("CreateMultipartUpload", func(ctx context.Context) error {
			out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("exports/2024.csv")})
			if err == nil && uploadID == nil {
				uploadID = out.UploadId
			}
			return err
		}),
		w("UploadPart", func(ctx context.Context) error {
			out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("exports/2024.csv"),
				UploadId: uploadID, PartNumber: aws.Int32(1), Body: strings.NewReader("order,amount\n77,4300\n")})
			if err == nil && partETag == nil {
				partETag = out.ETag
			}
			return err
		}),
		w("CompleteMultipartUpload", func(ctx context.Context) error {
			_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("exports/2024.csv"),
				UploadId: uploadID, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: []s3types.CompletedPart{
					{PartNumber: aws.Int32(1), ETag: partETag}}}})
			return err
		}),
		w("CreateBucket (scratch)", func(ctx context.Context) error {
			_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("scratch")})
			return err
		}),
		w("DeleteBucket (scratch)", func(ctx context.Context) error {
			_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("scratch")})
			return err
		}),
	}
}

// aws-sdk-go-v2's S3 client through the shipped S3 pack against gofakes3
// (an in-memory S3 on TLS): each write is made twice with the same
// arguments and must reach S3 once, and a replaced object must hold its new
// bytes. The SDK's own retry of a call whose answer was lost is answered
// from the journal (it re-signs each attempt and sends its own
// amz-sdk-invocation-id; neither takes part in the key). A hold (approval
// required on delete_object) reaches the SDK as an HTTP response error it
// decodes (status 409), and nothing reaches S3.
func TestPackS3SDK(t *testing.T) {
	mock := newS3Mock(t)
	pack := packAt(t, "s3", "https", map[string]string{"*.s3.amazonaws.com": mock.host()})
	start := func(t *testing.T, rules string) *proc {
		s := newSetup(t, map[string]string{"s3.yaml": rules})
		s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+(&upstream{Server: mock.Server}).caPEM(t, s.dir)+"\n"))
		return s.start(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("each write twice", func(t *testing.T) {
		c, la := s3Through(t, start(t, pack), mock, nil)
		checkOnceEach(t, "S3", callTwice(t, s3Writes(c, la), mock.writes))
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("refunds"), Key: aws.String("2024/order-77.json")})
		if err != nil {
			t.Fatalf("get the replaced object: %v", err)
		}
		defer out.Body.Close()
		if b, _ := io.ReadAll(out.Body); !bytes.Contains(b, []byte("4300")) {
			t.Errorf("order-77.json = %s, want the bytes that replaced it (a valid PutObject was not applied)", b)
		}
	})

	t.Run("the SDK's retry", func(t *testing.T) {
		const key = "/refunds/2024/order-78.json"
		drop := &dropFirst{path: key, keys: map[string][]string{}}
		c, la := s3Through(t, start(t, pack), mock, func(rt http.RoundTripper) http.RoundTripper { drop.base = rt; return drop })
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("refunds"), Key: aws.String("2024/order-78.json"), Body: strings.NewReader(`{"order":78}`)})
		if err != nil {
			t.Fatalf("put: %v", err)
		}
		if n := len(drop.sends(key)); n != 2 {
			t.Fatalf("the SDK sent the put %d times, want 2 (its retry of the lost answer)", n)
		}
		resp := la.answer()
		if o := resp.Header.Get("Toolguard-Outcome"); o != "replayed" {
			t.Errorf("the SDK's retry: outcome %q, want replayed", o)
		}
		if n := mock.reached(resp.Request); n != 1 {
			t.Errorf("puts that reached S3 = %d, want 1", n)
		}
	})

	t.Run("hold", func(t *testing.T) {
		c, la := s3Through(t, start(t, requireApproval(t, pack, "delete_object")), mock, nil)
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("refunds"), Key: aws.String("2024/order-77.json")})
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusConflict {
			t.Fatalf("error = %v, want an *awshttp.ResponseError, status 409", err)
		}
		t.Logf("the hold as aws-sdk-go-v2 reports it: %v", err)
		resp := la.answer()
		if resp.Header.Get("Toolguard-Key") == "" {
			t.Errorf("the hold carries no Toolguard-Key")
		}
		if n := mock.reached(resp.Request); n != 0 {
			t.Errorf("held deletes that reached S3 = %d, want 0", n)
		}
	})
}
