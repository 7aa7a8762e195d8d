package main

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"

	"github.com/toolguard/toolguard/config"
)

// newLogger is the one place logging is set up: tint on a terminal, JSON
// otherwise (format auto), or what the config names.
func newLogger(w io.Writer, c config.Log) *slog.Logger {
	level := c.Level.Level()
	format := c.Format
	if format == config.FormatAuto {
		format = config.FormatJSON
		if isTerminal(w) {
			format = config.FormatTint
		}
	}
	var h slog.Handler
	switch format {
	case config.FormatTint:
		h = tint.NewHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly})
	case config.FormatText:
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	default:
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	}
	return slog.New(h)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
