package decode

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
)

// ExprError is an expression that failed to compile, located inside the
// string value at Ptr: From and To are rune offsets inside that string.
type ExprError struct {
	Ptr      string
	From, To int
	Err      error
}

func (e *ExprError) Error() string { return fmt.Sprintf("%s: %v", e.Ptr, e.Err) }
func (e *ExprError) Unwrap() error { return e.Err }

// errExprTooBig marks an expression over the node or length budget.
var errExprTooBig = errors.New("expression exceeds its size bound")

// CompileTemplate compiles a program value that may embed "{{ expr }}"
// (see Template). ptr is the JSON Pointer of v; v is a plain JSON value as
// encoding/json decodes it. The first failing expression is returned as an
// *ExprError.
func CompileTemplate(ptr string, v any, maxNodes uint) (*model.Template, error) {
	var first error
	t := compileTemplateValue(ptr, v, func(s string) (*model.Expr, error) {
		return model.CompileExpr(s, maxNodes)
	}, func(e *ExprError) {
		if first == nil {
			first = e
		}
	})
	if first != nil {
		return nil, first
	}
	return t, nil
}

type compileFn func(src string) (*model.Expr, error)

// compileTemplateValue builds a Template, reporting each broken expression
// through bad and leaving it out.
func compileTemplateValue(ptr string, v any, compile compileFn, bad func(*ExprError)) *model.Template {
	switch x := v.(type) {
	case string:
		return compileTemplateString(ptr, x, compile, bad)
	case map[string]any:
		t := &model.Template{Ptr: ptr, Object: make(map[string]*model.Template, len(x))}
		for _, k := range core.SortedKeys(x) {
			t.Object[k] = compileTemplateValue(ptr+"/"+core.EscapePtr(k), x[k], compile, bad)
		}
		return constIfPure(t, v)
	case []any:
		t := &model.Template{Ptr: ptr, Array: make([]*model.Template, len(x))}
		for i, e := range x {
			t.Array[i] = compileTemplateValue(fmt.Sprintf("%s/%d", ptr, i), e, compile, bad)
		}
		return constIfPure(t, v)
	}
	return &model.Template{Ptr: ptr, IsConst: true, Const: v}
}

// constIfPure turns a composite template without expressions into a
// constant, so that the hot path copies nothing.
func constIfPure(t *model.Template, v any) *model.Template {
	for _, s := range t.Object {
		if !s.IsConst {
			return t
		}
	}
	for _, s := range t.Array {
		if !s.IsConst {
			return t
		}
	}
	return &model.Template{Ptr: t.Ptr, IsConst: true, Const: v}
}

// templateSpan is one "{{ ... }}" inside a string, in byte offsets.
type templateSpan struct {
	open, close int // byte offsets of "{{" and of the matching "}}"
}

// templateSpans finds the "{{ }}" spans of s; unclosed reports the byte
// offset of an opening "{{" without a closing one (-1 if none).
func templateSpans(s string) (spans []templateSpan, unclosed int) {
	i := 0
	for {
		o := strings.Index(s[i:], "{{")
		if o < 0 {
			return spans, -1
		}
		o += i
		c := strings.Index(s[o+2:], "}}")
		if c < 0 {
			return spans, o
		}
		c += o + 2
		spans = append(spans, templateSpan{o, c})
		i = c + 2
	}
}

func compileTemplateString(ptr, s string, compile compileFn, bad func(*ExprError)) *model.Template {
	if !strings.Contains(s, "{{") {
		return &model.Template{Ptr: ptr, IsConst: true, Const: s}
	}
	spans, unclosed := templateSpans(s)
	if unclosed >= 0 {
		at := utf8.RuneCountInString(s[:unclosed])
		bad(&ExprError{Ptr: ptr, From: at, To: at + 2, Err: errors.New("\"{{\" without a closing \"}}\"")})
		return &model.Template{Ptr: ptr, IsConst: true, Const: s}
	}
	whole := len(spans) == 1 && spans[0].open == 0 && spans[0].close == len(s)-2
	t := &model.Template{Ptr: ptr}
	last := 0
	ok := true
	for _, sp := range spans {
		if sp.open > last {
			t.Parts = append(t.Parts, model.TemplatePart{Text: s[last:sp.open]})
		}
		x := compileSpan(ptr, s, sp.open+2, sp.close, compile, bad)
		if x == nil {
			ok = false
		}
		t.Parts = append(t.Parts, model.TemplatePart{Expr: x})
		last = sp.close + 2
	}
	if last < len(s) {
		t.Parts = append(t.Parts, model.TemplatePart{Text: s[last:]})
	}
	if !ok {
		return &model.Template{Ptr: ptr, IsConst: true, Const: s}
	}
	if whole {
		return &model.Template{Ptr: ptr, Whole: t.Parts[0].Expr}
	}
	return t
}

// compileSpan compiles s[from:to] (byte offsets) as one expression located
// inside the string at ptr.
func compileSpan(ptr, s string, from, to int, compile compileFn, bad func(*ExprError)) *model.Expr {
	inner := s[from:to]
	lead := len(inner) - len(strings.TrimLeft(inner, " \t\r\n"))
	src := strings.TrimSpace(inner)
	offset := utf8.RuneCountInString(s[:from+lead])
	if src == "" {
		bad(&ExprError{Ptr: ptr, From: 0, To: utf8.RuneCountInString(s), Err: errors.New("empty expression")})
		return nil
	}
	x, err := compile(src)
	if err != nil {
		bad(exprError(ptr, src, offset, err))
		return nil
	}
	x.Ptr, x.Offset = ptr, offset
	return x
}

// exprError locates a compile error of src (found at rune offset offset of
// the string at ptr).
func exprError(ptr, src string, offset int, err error) *ExprError {
	n := utf8.RuneCountInString(src)
	from, to := 0, n
	var fe *file.Error
	if errors.As(err, &fe) {
		from, to = fe.From, fe.To
		if to <= from {
			to = from + 1
		}
		err = errors.New(fe.Message)
	}
	from, to = min(max(from, 0), n), min(max(to, 0), n)
	return &ExprError{Ptr: ptr, From: offset + from, To: offset + to, Err: err}
}

// bareExpr compiles an expression-typed field (if, when, while, until,
// expr): the whole string is the expression; an optional "{{ }}" around it
// is accepted.
func bareExpr(ptr, s string, compile compileFn, bad func(*ExprError)) *model.Expr {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}") && len(t) >= 4 {
		open := strings.Index(s, "{{")
		close := strings.LastIndex(s, "}}")
		if !strings.Contains(s[open+2:close], "}}") {
			return compileSpan(ptr, s, open+2, close, compile, bad)
		}
	}
	return compileSpan(ptr, s, 0, len(s), compile, bad)
}
