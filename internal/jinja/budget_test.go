package jinja

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// attacks are templates from whoever may publish discovery that crashed,
// froze or swelled the house (issue 28), and earlier ones (issue 14). Each
// must end, within the time and memory a rendering's budget allows, with
// the error named (or, when want is nil, a bounded result).
var attacks = []struct {
	name, src string
	want      error
}{
	// A namespace printed restarted the depth guard: fatal stack overflow.
	{"namespace holding itself", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}", nil},
	{"namespace in a list in itself", "{% set ns = namespace(a=1) %}{% set ns.a = [ns] %}{{ ns.a }}", nil},
	{"namespace holding itself | string", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns | string }}", nil},
	{"namespace holding itself | tojson", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns | tojson }} {{ [ns] | to_json }}", nil},
	{"namespace holding itself in a format", "{% set ns = namespace(a=1) %}{% set ns.a = [ns, ns] %}{{ '%s %r' % (ns, ns) }}", nil},
	{"namespace compared with itself", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns == ns }} {{ ns in [ns] }}", nil},
	{"list nested past MaxDepth", "{% set ns = namespace(x=0) %}{% for i in range(300) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}", ErrDepth},
	{"list nested past MaxDepth ==", "{% set ns = namespace(x=0, y=0) %}{% for i in range(300) %}{% set ns.x = [ns.x] %}{% set ns.y = [ns.y] %}{% endfor %}{{ ns.x == ns.y }}", ErrDepth},
	// Repeating an empty list looped k times for one unit.
	{"empty list repeated 9e18 times", "{{ ([] * 9000000000000000000) | length }}", nil},
	{"empty string repeated 9e18 times", "{{ ('' * 9000000000000000000) | length }}", nil},
	// Walks of shared nested lists charged one unit.
	{"== of shared nested lists", "{% set a=[0]*4000 %}{% set b=[a]*4000 %}{% for i in range(300) %}{% if b == b %}{% endif %}{% endfor %}", nil},
	{"== of two equal nested lists", "{% set a=[0]*4000 %}{% set c=[0]*4000 %}{% set b=[a]*4000 %}{% set d=[c]*4000 %}{{ b == d }}", ErrBudget},
	{"== of equal unshared lists", "{% set a=[0]*4000 %}{% set c=[0]*4000 %}{% set b=[a]*4000 %}{% set d=[c]*4000 %}{% for i in range(300) %}{{ b == d }}{% endfor %}", ErrBudget},
	{"< of shared nested lists", "{% set a=[0]*4000 %}{% set c=[0]*4000 %}{% set b=[a]*4000 %}{% set d=[c]*4000 %}{% for i in range(300) %}{{ b < d }}{% endfor %}", ErrBudget},
	{"in over shared nested lists", "{% set a=[0]*4000 %}{% set c=[0]*3999 %}{% set b=[a]*4000 %}{% for i in range(300) %}{{ c in b }}{% endfor %}", ErrBudget},
	{"sort of shared nested lists", "{% set a=[0]*4000 %}{% set c=[0]*4000 %}{{ ([a]*2000 + [c]*2000) | sort | length }}", ErrBudget},
	{"unique of shared nested lists", "{% set a=[0]*4000 %}{% set b=[a]*16 %}{% set c=[0]*4000 %}{{ (b + [c]*16) | unique | length }}", ErrBudget},
	{"dict(pairs) of many keys", "{{ dict(zip(range(10000), range(10000))) | length }}", ErrBudget},
	{"dict(pairs) of nested keys", "{% set a=[0]*4000 %}{% set c=[0]*4000 %}{{ dict([((a, 1), 1), ((c, 1), 2)] * 20) | length }}", ErrBudget},
	{"tojson of shared nested lists", "{% set a=[0]*4000 %}{% set b=[a]*4000 %}{% for i in range(300) %}{{ b | tojson | length }}{% endfor %}", errAny},
	{"repr of shared nested lists", "{% set a=['x'*4000]*4000 %}{% set b=[a]*4000 %}{% for i in range(300) %}{{ b | string | length }}{% endfor %}", ErrSize},
	{"join of shared nested lists", "{% set a=[0]*4000 %}{% set b=[a]*4000 %}{{ b | join(',') | length }}", errAny},
	// Regular expressions made their output before the size check.
	{"regex_replace of '' by 30,000 bytes", "{{ ('x'*30000) | regex_replace('', 'y'*30000) }}", errAny},
	{"regex_replace by group references", "{{ ('x'*30000) | regex_replace('(x+)', '\\\\1'*20000) }}", ErrSize},
	{"regex_findall of '' on 60 kB", "{{ ('x'*60000) | regex_findall('') | length }}", nil},
	{"regex_findall of '' on 60 kB in a loop", "{% for i in range(1000) %}{{ ('x'*60000) | regex_findall('') | length }}{% endfor %}", ErrBudget},
	{"3,000 distinct dynamic patterns", "{% for i in range(3000) %}{{ 'x' | regex_match('a' ~ i ~ 'x'*400) }}{% endfor %}", ErrBudget},
	{"patterns that compile large", "{% for i in range(3000) %}{{ 'x' | regex_match('(a{30}){30}' ~ i) }}{% endfor %}", errAny},
	{"unicode classes", "{{ 'x' | regex_match('\\\\pL' * 120) }}", errPatternSize},
	{"unicode classes in a loop", "{% for i in range(3000) %}{{ 'x' | regex_match('\\\\pL' * 10 ~ i) }}{% endfor %}", ErrBudget},
	{"a pattern longer than MaxPatternLen", "{{ 'x' | regex_match('a' * 600) }}", nil},
	// Conversions that scanned or copied long strings for one unit.
	{"string index in a loop", "{% set s = 'é' * 30000 %}{% for i in range(10000) %}{{ s[i] }}{% endfor %}", ErrBudget},
	{"float of long text in a loop", "{% set s = ' ' * 60000 %}{% for i in range(10000) %}{{ s | float(0) }}{% endfor %}", nil},
	{"lower in a loop", "{% set s = 'A' * 60000 %}{% for i in range(10000) %}{{ (s | lower)[0] }}{% endfor %}", ErrBudget},
	{"split in a loop", "{% set s = 'a ' * 30000 %}{% for i in range(10000) %}{{ s.split() | length }}{% endfor %}", ErrBudget},
	{"timestamp_custom with a long format", "{{ 0 | timestamp_custom('%A' * 7000) | length }}", ErrSize},
	{"a long missing attribute in a loop", "{% for i in range(10000) %}{{ value." + strings.Repeat("a", 8000) + " }}{% endfor %}", ErrBudget},
	{"a long replacement in a loop", "{% set r = '\\\\1' * 30000 %}{% for i in range(5000) %}{{ 'x' | regex_replace('y', r) }}{% endfor %}", ErrBudget},
	// Issue 14's.
	{"negative repeat", "{{ 'a' * -1 }}", nil},
	{"string repeated past MaxValue", "{{ 'ab' * 100000000 }}", ErrSize},
	{"list repeated past MaxValue", "{{ [1] * 100000000 }}", ErrSize},
	{"range past MaxRange", "{{ range(1000000000) | first }}", nil},
	{"nested loops", "{% for i in range(10000) %}{% for j in range(10000) %}{{ i }}{% endfor %}{% endfor %}", ErrBudget},
	{"doubling a string", "{% set x = 'x' * 1000 %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{{ x | length }}", ErrSize},
	{"replace of '' three times", "{% set x = 'x' * 4000 %}{{ x | replace('', x) | replace('', x) | replace('', x) }}", ErrSize},
	{"a huge power", "{{ 10 ** 10 ** 10 }}", nil},
	{"a wide format", "{{ '%09999999d' % 1 }}", nil},
	{"truncate at a huge length", "{{ 'x' | truncate(1000000000) }}", nil},
	{"findall then unique in a loop", "{% set x = 'x' * 4000 %}{% for c in x %}{{ x | regex_findall('.') | unique | length }}{% endfor %}", ErrBudget},
}

// errAny: the attack may end on any of the budget's errors.
var errAny = errors.New("any budget error")

// Ceilings of one attack's rendering: a second of wall clock (the fastest
// of three, so a busy machine does not fail it) and 64 MiB allocated.
const (
	attackTime  = time.Second
	attackAlloc = 64 << 20
)

// TestAttacksBounded: every attack ends within the ceilings, with its
// error, and the next rendering of the same template is bounded the same.
func TestAttacksBounded(t *testing.T) {
	g0 := runtime.NumGoroutine()
	for _, tc := range attacks {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := Compile(tc.src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			var res Result
			fastest, most := time.Duration(1<<62), uint64(0)
			for range 3 {
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				t0 := time.Now()
				res, err = tp.Render(Input{Value: "x", JSON: NoJSON}, DefaultBudget)
				fastest = min(fastest, time.Since(t0))
				runtime.ReadMemStats(&m1)
				most = max(most, m1.TotalAlloc-m0.TotalAlloc)
			}
			if fastest > attackTime*raceSlowdown {
				t.Errorf("took %v (ceiling %v)", fastest, attackTime*raceSlowdown)
			}
			if most > attackAlloc {
				t.Errorf("allocated %d MiB (ceiling %d MiB)", most>>20, attackAlloc>>20)
			}
			if len(res.Text) > MaxValue || res.Spent > DefaultBudget {
				t.Errorf("made %d bytes, spent %d", len(res.Text), res.Spent)
			}
			if tc.want == errAny && !errors.Is(err, ErrBudget) && !errors.Is(err, ErrSize) && !errors.Is(err, ErrDepth) && !errors.Is(err, errPatternSize) {
				t.Errorf("error %v, want one of the budget's", err)
			} else if tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "template failed") {
				t.Errorf("panicked: %v", err)
			}
		})
	}
	testutil.Eventually(t, 5*time.Second, "the goroutines of before", func() bool { return runtime.NumGoroutine() <= g0 })
}

// TestNamespaceCyclePrints: a namespace that holds itself prints as
// Python prints a dict that holds itself.
func TestNamespaceCyclePrints(t *testing.T) {
	runCases(t, []renderCase{
		{"{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}", "", "<Namespace {'a': <Namespace {...}>}>"},
		{"{% set ns = namespace(a=1) %}{% set ns.a = [ns] %}{{ ns.a }}", "", "[<Namespace {'a': [<Namespace {...}>]}>]"},
		{"{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns | string }}", "", "<Namespace {'a': <Namespace {...}>}>"},
		{"{% set ns = namespace(a=1) %}{% set m = namespace(n=ns) %}{% set ns.a = m %}{{ m }}", "", "<Namespace {'n': <Namespace {'a': <Namespace {...}>}>}>"},
		{"{% set ns = namespace(a=1, b=2) %}{{ ns }}", "", "<Namespace {'a': 1, 'b': 2}>"},
	})
}
