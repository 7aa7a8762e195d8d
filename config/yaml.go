package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/toolguard/toolguard/internal/suggest"
)

// decodeYAML sets the settings the YAML document in data names on c and
// returns their paths in document order. It walks goccy/go-yaml's syntax
// tree itself, rather than calling yaml.Unmarshal with yaml.Strict, so that
// every error, a bad duration included, carries a line, a column and the
// yaml path.
func decodeYAML(data []byte, c *Config) ([]string, error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(err)
	}
	var docs []*ast.DocumentNode
	for _, doc := range file.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		return nil, nil
	}
	if len(docs) > 1 {
		e := errAt(docs[1].Body, "", "", "more than one YAML document; want one")
		if start := docs[1].Start; start != nil && start.Position != nil {
			e.Line, e.Column = start.Position.Line, start.Position.Column // the "---"
		}
		return nil, e
	}
	d := &decoder{anchors: map[string]ast.Node{}}
	if err := d.decode(docs[0].Body, reflect.ValueOf(c).Elem(), ""); err != nil {
		return nil, err
	}
	return d.seen, nil
}

type decoder struct {
	anchors map[string]ast.Node // by name, as defined so far
	seen    []string            // yaml paths of the values set
}

func (d *decoder) decode(n ast.Node, v reflect.Value, path string) error {
	n, err := d.resolve(n, path)
	if err != nil {
		return err
	}
	if n == nil || n.Type() == ast.NullType {
		return nil // an empty value keeps the default
	}
	if isSection(v.Type()) {
		return d.decodeSection(n, v, path)
	}
	if err := d.decodeValue(n, v, path); err != nil {
		return err
	}
	d.seen = append(d.seen, path)
	return nil
}

// resolve looks through tags, anchors and aliases to the node that holds
// the value.
func (d *decoder) resolve(n ast.Node, path string) (ast.Node, error) {
	for hops := 0; ; hops++ {
		if hops > 100 { // &a *a
			return nil, errAt(n, path, "", "alias refers to itself")
		}
		switch t := n.(type) {
		case *ast.TagNode:
			if tag := t.Start.Value; !strings.HasPrefix(tag, "!!") {
				return nil, errAt(t, path, tag, fmt.Sprintf("unsupported tag %s", tag))
			}
			n = t.Value
		case *ast.AnchorNode:
			d.anchors[t.Name.GetToken().Value] = t.Value
			n = t.Value
		case *ast.AliasNode:
			name := t.Value.GetToken().Value
			target, ok := d.anchors[name]
			if !ok {
				msg := fmt.Sprintf("unknown alias *%s", name)
				if strings.HasPrefix(name, ".") { // *.example.com in allow_hosts
					msg += fmt.Sprintf(` (quote a wildcard host: "*%s")`, name)
				}
				return nil, errAt(t, path, name, msg)
			}
			n = target
		default:
			return n, nil
		}
	}
}

func (d *decoder) decodeSection(n ast.Node, v reflect.Value, path string) error {
	m, ok := n.(ast.MapNode)
	if !ok {
		return errAt(n, path, "", "want a mapping of settings (got "+kind(n)+")")
	}
	for it := m.MapRange(); it.Next(); {
		key := it.Key().GetToken().Value
		i, ok := fieldByYAMLName(v.Type(), key)
		if !ok {
			msg := fmt.Sprintf("unknown field %q%s", key, suggestField(v.Type(), key))
			return errAt(it.Key(), path, key, msg)
		}
		if err := d.decode(it.Value(), v.Field(i), joinPath(path, key)); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) decodeValue(n ast.Node, v reflect.Value, path string) error {
	t := v.Type()
	if seq, ok := n.(*ast.SequenceNode); ok && t == listType {
		return d.decodeList(seq, v, path)
	}
	if isSectionList(t) {
		return d.decodeSectionList(n, v, path)
	}
	text, ok := scalarText(n)
	if !ok {
		if t == listType {
			return errAt(n, path, "", "want a list or a comma-separated value (got "+kind(n)+")")
		}
		return errAt(n, path, "", "want a single value (got "+kind(n)+")")
	}
	var err error
	switch {
	case t == durationType:
		var dur time.Duration
		if dur, err = time.ParseDuration(text); err == nil {
			v.SetInt(int64(dur))
		}
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		err = v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text))
	case t.Kind() == reflect.String:
		v.SetString(text)
	case t.Kind() == reflect.Bool:
		var b bool
		if b, err = strconv.ParseBool(text); err == nil {
			v.SetBool(b)
		}
	case t.Kind() == reflect.Int:
		var i int64
		if i, err = strconv.ParseInt(text, 10, 64); err == nil && v.OverflowInt(i) {
			err = strconv.ErrRange
		}
		if err == nil {
			v.SetInt(i)
		}
	default:
		panic(fmt.Sprintf("config: %s has type %s, which decodeValue does not handle", path, t))
	}
	if err != nil {
		return errAt(n, path, text, valueMsg(t, text, err))
	}
	return nil
}

// decodeList sets the List v to the items of seq, each a scalar holding one
// entry, trimmed of spaces. An item that is empty, holds a comma or is no
// scalar is an error at that item. An empty sequence sets nil, as an empty
// comma-separated value does.
func (d *decoder) decodeList(seq *ast.SequenceNode, v reflect.Value, path string) error {
	var list List
	for i, item := range seq.Values {
		item, err := d.resolve(item, path)
		if err != nil {
			return err
		}
		if item.Type() == ast.NullType {
			e := errAt(item, path, "", "empty list item")
			if pos := entryPos(seq, i); pos != nil { // a missing value has no place of its own
				e.Line, e.Column = pos.Line, pos.Column
			}
			return e
		}
		text, ok := scalarText(item)
		if !ok {
			return errAt(item, path, "", "want a single value per list item (got "+kind(item)+")")
		}
		switch text = strings.TrimSpace(text); {
		case text == "":
			return errAt(item, path, "", "empty list item")
		case strings.Contains(text, ","):
			return errAt(item, path, text, fmt.Sprintf("want one value per list item (got %q)", text))
		}
		list = append(list, text)
	}
	v.Set(reflect.ValueOf(list))
	return nil
}

// decodeSectionList sets the list of sections v (notify.webhooks) to the
// items of the sequence n, each a mapping of the item's settings decoded
// as a section (strictly) at path[i]. An empty sequence sets nil.
func (d *decoder) decodeSectionList(n ast.Node, v reflect.Value, path string) error {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return errAt(n, path, "", "want a list of mappings (got "+kind(n)+")")
	}
	list := reflect.MakeSlice(v.Type(), 0, len(seq.Values))
	for i, item := range seq.Values {
		itemPath := path + "[" + strconv.Itoa(i) + "]"
		item, err := d.resolve(item, itemPath)
		if err != nil {
			return err
		}
		if item.Type() == ast.NullType {
			e := errAt(item, path, "", "empty list item")
			if pos := entryPos(seq, i); pos != nil {
				e.Line, e.Column = pos.Line, pos.Column
			}
			return e
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.decodeSection(item, elem, itemPath); err != nil {
			return err
		}
		list = reflect.Append(list, elem)
	}
	if list.Len() == 0 {
		list = reflect.Zero(v.Type())
	}
	v.Set(list)
	return nil
}

// entryPos is the position of the "-" of item i of a block sequence, or nil.
func entryPos(seq *ast.SequenceNode, i int) *token.Position {
	if seq.IsFlowStyle || i >= len(seq.Entries) || seq.Entries[i] == nil || seq.Entries[i].Start == nil {
		return nil
	}
	return seq.Entries[i].Start.Position
}

// scalarText is the text of a scalar node as written, quotes removed; so
// `token: 0123` stays "0123".
func scalarText(n ast.Node) (string, bool) {
	switch s := n.(type) {
	case *ast.StringNode:
		return s.Value, true
	case *ast.LiteralNode:
		return s.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

// kind names the type of n with its article: "a mapping", "an int".
func kind(n ast.Node) string {
	name := n.Type().YAMLName()
	if name == "" {
		return "something else"
	}
	if strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

func fieldByYAMLName(t reflect.Type, name string) (int, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && tag == name && tag != "-" {
			return i, true
		}
	}
	return 0, false
}

// suggestField returns ` (did you mean "x"?)` for an unknown key: the setting of
// that name in another section ("max_body" at the top means
// "limits.max_body"), else a sibling within two edits of it, else "".
func suggestField(t reflect.Type, key string) string {
	if strings.Contains(key, ".") {
		return " (write sections as nested mappings, not dotted keys)"
	}
	for _, s := range settings() {
		if strings.HasSuffix("."+s.path, "."+key) {
			return fmt.Sprintf(" (did you mean %q?)", s.path)
		}
	}
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		names = append(names, name)
	}
	return suggest.Hint(key, names)
}

// errAt is an *Error at n's position. Field is the yaml path of the mapping
// or value at fault.
func errAt(n ast.Node, path, value, msg string) *Error {
	e := &Error{Field: path, Value: value, Msg: msg}
	if m, ok := n.(ast.MapNode); ok {
		if it := m.MapRange(); it.Next() {
			n = it.Key() // a mapping's own token is its first ":"
		}
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	return e
}

// syntaxError turns goccy/go-yaml's multi-line error into a one-line *Error.
func syntaxError(err error) *Error {
	e := &Error{Msg: err.Error(), Err: err}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}
