// Package config holds toolguard's settings and builds them from defaults, a
// strict YAML file, TOOLGUARD_* environment variables and the flags the cmd
// layer applies, in that order of increasing precedence (see Load).
// It is plain data: parsing reads only what it is given, and every problem is
// an *Error that names the setting, and in a file its line and column.
package config
