package main

import (
	"fmt"
	"io"

	"github.com/toolguard/toolguard/tlsca"
)

const caHelp = `Usage: toolguard ca init [--dir DIR]

Creates the CA (ca.pem, and ca-key.pem with mode 0600) that toolguard signs
intercepted hosts' certificates with, or prints the existing one's path.
Agents trust ca.pem (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS).
`

func runCA(args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("ca", args, stdout, caHelp)
	if err != nil {
		return err
	}
	if sub != "init" {
		return usagef("ca: unknown sub-command %q\n%s", sub, caHelp)
	}
	var dir string
	fs := newFlags("ca init", "ca init [--dir DIR]", stdout)
	fs.StringVar(&dir, "dir", envOr("TOOLGUARD_CA_DIR", "./ca"), "CA `dir`ectory")
	if err := parseNoArgs(fs, rest); err != nil {
		return err
	}
	ca, created, err := tlsca.LoadOrCreate(dir)
	if err != nil {
		return err
	}
	verb := "exists"
	if created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "CA %s: %s\n", verb, absPath(ca.CertFile))
	return nil
}
