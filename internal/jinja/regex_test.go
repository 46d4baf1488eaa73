package jinja

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestRegex: Home Assistant's regex filters and tests, Python's
// replacement syntax.
func TestRegex(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 'a1b22' | regex_replace('\\\\d+', '#') }} {{ 'ab' | regex_replace('(a)(b)', '\\\\2\\\\1') }} {{ 'ab' | regex_replace('(?P<x>a)', '[\\\\g<x>]') }}", "", "a#b# ba [a]b"},
		{"{{ 'a$b' | regex_replace('b', '$0') }} {{ 'ab' | regex_replace('(x)?a', '<\\\\1>') }} {{ 'aaa' | regex_replace('', '-') }}", "", "a$$0 <>b -a-a-a-"},
		{"{{ 't=1;u=22' | regex_findall('\\\\d+') }} {{ 'k=v;x=y' | regex_findall('(\\\\w)=(\\\\w)') }}", "", "['1', '22'] [('k', 'v'), ('x', 'y')]"},
		{"{{ 'abc' | regex_match('b') }} {{ 'abc' | regex_search('b') }} {{ 'ABC' | regex_match('a', ignorecase=true) }}", "", "False True True"},
		{"{{ 'ab' | regex_replace('(a)', '[\\\\g<1>][\\\\g<9>]') }}", "", "[a][]b"},
		{"{{ 'x1y2' | regex_findall_index('\\\\d', 1) }} {{ 'abc' is match('a') }}", "", "2 True"},
	})
	runErrCases(t, []errCase{
		{"{{ 'a' | regex_match('(?<=a)b') }}", "", "pattern"},
		{"{{ 'a' | regex_findall_index('x') }}", "", "list index out of range"},
		{"{{ 'a' | regex_match('a' * 600) }}", "", "longer than 512 bytes"},
		{"{{ 'a' | regex_match('(a{30}){30}') }}", "", "pattern too large"},
	})
}

// TestRegexCache: the cache keeps at most MaxPatterns patterns and
// MaxPatternBytes; dynamic patterns past it are compiled and charged each
// time.
func TestRegexCache(t *testing.T) {
	tp, err := Compile("{% for i in range(40) %}{{ 'x' | regex_match('x' ~ i) }}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := tp.Render(Input{}, DefaultBudget); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tp.regex.m); n > MaxPatterns {
		t.Errorf("%d patterns cached", n)
	}
	big := fmt.Sprintf("{%% for i in range(40) %%}{{ 'x' | regex_match('%s' ~ i) }}{%% endfor %%}", strings.Repeat(`\\pL`, 10))
	tp, err = Compile(big)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tp.Render(Input{}, DefaultBudget)
	if !errors.Is(err, ErrBudget) {
		t.Errorf("40 large patterns: %v, want ErrBudget", err)
	}
	if tp.regex.bytes > MaxPatternBytes {
		t.Errorf("%d bytes of patterns cached", tp.regex.bytes)
	}
}

// TestRegexOutputCharged: a replacement is counted before it is made,
// and findall makes no more matches than it can pay for.
func TestRegexOutputCharged(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"{{ ('x' * 30000) | regex_replace('', 'y' * 30000) }}", ErrBudget},
		{"{{ ('x' * 3) | regex_replace('', 'y' * 30000) }}", ErrSize},
		{"{{ ('x' * 100) | regex_replace('', 'y' * 100) | length }}", nil},
		{"{{ ('x' * 2000) | regex_findall('') | length }}", nil},
		{"{{ ('x' * 10000) | regex_findall('') | length }}", ErrBudget},
		{"{{ ('x' * 60000) | regex_findall('') | length }}", ErrBudget},
		{"{% for i in range(10) %}{{ ('x' * 60000) | regex_findall('') | length }}{% endfor %}", ErrBudget},
	} {
		if _, err := render(t, tc.src, ""); !errors.Is(err, tc.want) {
			t.Errorf("%.60q: %v, want %v", tc.src, err, tc.want)
		}
	}
}

// TestCompileNotesBounded: compiling a template compiles its literal
// patterns within one budget and while the cache has room; a template of
// hundreds of expansive patterns made 90 MiB each time it was compiled.
func TestCompileNotesBounded(t *testing.T) {
	const compileAlloc = 16 << 20
	var b strings.Builder
	for i := 0; b.Len() < MaxTemplateLen-100; i++ {
		fmt.Fprintf(&b, "{{ value | regex_match('a{700}%d') }}", i)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	tp, err := Compile(b.String())
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > compileAlloc {
		t.Errorf("compiling allocated %d MiB (ceiling %d MiB)", a>>20, compileAlloc>>20)
	}
	if n := len(tp.regex.m); n == 0 || n > MaxPatterns {
		t.Errorf("%d patterns noted", n)
	}
	if _, err := tp.Render(Input{Value: "x"}, DefaultBudget); !errors.Is(err, ErrBudget) {
		t.Errorf("rendering them all: %v, want ErrBudget", err)
	}
}

// TestRenderConcurrently: renderings of one template may run at once (the
// pattern cache is shared); run with -race.
func TestRenderConcurrently(t *testing.T) {
	tp, err := Compile("{% for i in range(30) %}{{ value | regex_replace('x' ~ i, 'y') }}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := tp.Render(Input{Value: "x1"}, DefaultBudget)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
