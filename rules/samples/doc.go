// Package samples checks a rule file against sample requests, as
// toolguard rules check --sample and the rule packs' tests do: it reads a
// samples file (JSON lines, one request each) and derives every sample's
// key with package rules. It reports what a rule author must fix (samples
// no route matches or that cannot be keyed, same_key_as and
// key_differs_from pairs whose keys disagree, optional key fields no
// sample holds) and what the samples leave untested (Report.Gaps).
//
// # Samples files
//
// Each line is a JSON object; Sample documents its members. A body is a
// JSON value sent as its encoding, or a JSON string sent as it is (form
// bodies); multipart lists the parts of a multipart/form-data body, which
// is built with a fixed boundary so that a sample always gives the same
// bytes.
package samples
