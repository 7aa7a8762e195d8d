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
// otherwise (format auto), or what the config names. Durations are written
// as Go writes them ("25s", "1.5ms") in every format, never as integer
// nanoseconds.
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
		h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, ReplaceAttr: durationString,
			NoColor: !isTerminal(w)}) // colours only where a terminal shows them
	case config.FormatText:
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: durationString})
	default:
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: durationString})
	}
	return slog.New(h)
}

// durationString writes a duration as text: slog's JSON handler would
// write integer nanoseconds, which nobody reads at a glance.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
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
