package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CheckFiles reads the files the configuration names besides the token
// files (see LoadSecrets) and returns an *Error naming the setting when one
// cannot serve: upstream.ca_file must hold at least one PEM certificate.
// It changes nothing. Load calls it, so that a bad file is a configuration
// error (exit status 2) rather than a failure to start.
func (c Config) CheckFiles() error {
	if c.Upstream.CAFile == "" {
		return nil
	}
	e := &Error{Field: "upstream.ca_file", Value: c.Upstream.CAFile}
	data, err := os.ReadFile(c.Upstream.CAFile)
	if err != nil {
		msg := err.Error()
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		e.Msg, e.Err = fmt.Sprintf("cannot read %s: %s", c.Upstream.CAFile, msg), err
		return e
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		e.Msg = fmt.Sprintf("%s holds no PEM certificate", c.Upstream.CAFile)
		return e
	}
	return nil
}
