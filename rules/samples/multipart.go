package samples

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"strings"
)

// Part is one part of a sample's multipart body: a field
// {"name", "value"}, or a file {"name", "filename", "content_type",
// "content"} whose content is text, or "content_base64" for bytes.
type Part struct {
	Name          string `json:"name"`
	Value         string `json:"value,omitempty"`
	Filename      string `json:"filename,omitempty"`
	ContentType   string `json:"content_type,omitempty"`
	Content       string `json:"content,omitempty"`
	ContentBase64 string `json:"content_base64,omitempty"`
}

// sampleBoundary is the boundary of every sample's multipart body, so
// that a sample always gives the same bytes.
const sampleBoundary = "toolguard-sample-boundary"

// checkMultipart refuses a multipart sample that also has a body or a
// content type, and parts that mix field and file members.
func (s *Sample) checkMultipart() error {
	if s.Multipart == nil {
		return nil
	}
	if len(s.Body) > 0 || s.ContentType != "" {
		return errors.New("multipart: a multipart sample has no body or content_type (they are made from its parts)")
	}
	for i, p := range s.Multipart {
		file := p.Filename != "" || p.ContentType != "" || p.Content != "" || p.ContentBase64 != ""
		switch {
		case p.Name == "":
			return fmt.Errorf("multipart[%d]: name is required", i)
		case file && p.Value != "":
			return fmt.Errorf("multipart[%d]: a part is a field (value) or a file (filename, content), not both", i)
		case p.Content != "" && p.ContentBase64 != "":
			return fmt.Errorf("multipart[%d]: content and content_base64 are mutually exclusive", i)
		case file && p.Filename == "":
			return fmt.Errorf("multipart[%d]: a file part needs a filename", i)
		}
		if _, err := base64.StdEncoding.DecodeString(p.ContentBase64); err != nil {
			return fmt.Errorf("multipart[%d]: content_base64: %v", i, err)
		}
	}
	return nil
}

// body returns the sample's request body and content type.
func (s *Sample) body() ([]byte, string) {
	if s.Multipart != nil {
		return s.multipartBody()
	}
	body := []byte(s.Body)
	var str string
	if json.Unmarshal(s.Body, &str) == nil {
		body = []byte(str) // a string body is sent as it is (forms)
	}
	return body, s.ContentType
}

func (s *Sample) multipartBody() ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.SetBoundary(sampleBoundary)
	for _, p := range s.Multipart {
		h := textproto.MIMEHeader{}
		disp := `form-data; name="` + quoteEscaper.Replace(p.Name) + `"`
		if p.Filename != "" {
			disp += `; filename="` + quoteEscaper.Replace(p.Filename) + `"`
			ct := p.ContentType
			if ct == "" {
				ct = "application/octet-stream"
			}
			h.Set("Content-Type", ct)
		}
		h.Set("Content-Disposition", disp)
		pw, _ := w.CreatePart(h) // writes to a bytes.Buffer cannot fail
		content := []byte(p.Value + p.Content)
		if p.ContentBase64 != "" {
			content, _ = base64.StdEncoding.DecodeString(p.ContentBase64) // checked on reading
		}
		pw.Write(content)
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")
