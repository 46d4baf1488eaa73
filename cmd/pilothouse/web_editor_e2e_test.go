package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestWebEditorEndToEnd writes a rule in the browser's editor at a desktop
// and a phone width: from a cookbook recipe, a typo shows as a diagnostic
// at its place in the program, following the diagnostic and retyping the
// value fixes it, a test run shows its steps, deploy installs it, an edit
// deploys a second version, the two are compared, and the first restored.
func TestWebEditorEndToEnd(t *testing.T) {
	for _, vp := range []struct {
		name string
		w, h int64
		opts []chromedp.EmulateViewportOption
	}{{"desktop", 1280, 900, nil}, {"phone", 390, 844, []chromedp.EmulateViewportOption{chromedp.EmulateMobile}}} {
		t.Run(vp.name, func(t *testing.T) {
			a := startTestApp(t, testConfig(t))
			base := a.URL()
			ctx := browser(t)
			shot := newShots(t)
			do(t, ctx, "viewport", chromedp.EmulateViewport(vp.w, vp.h, vp.opts...))

			// A recipe: the editor mounts and validates it at once.
			do(t, ctx, "editor", chromedp.Navigate(base+"/editor"), chromedp.WaitVisible(chromedp.CSS("#recipe")),
				chromedp.SetValue(chromedp.CSS("#recipe"), "motion-light-with-timeout"),
				chromedp.Click(chromedp.CSS(`form.recipes button`)),
				chromedp.WaitVisible(chromedp.CSS(".cm-content")))
			settled(t, ctx, "the recipe validated", `document.getElementById('ed-valid')`)
			if w := eval[int](t, ctx, `window.innerWidth`); w != int(vp.w) {
				t.Fatalf("page width %d, want %d", w, vp.w)
			}
			noSideways(t, ctx, "the editor")
			if got := eval[string](t, ctx, `document.querySelector('.cm-content').textContent`); !strings.Contains(got, "hall-motion-light") {
				t.Fatalf("editor text: %s", got)
			}
			if !eval[bool](t, ctx, `document.getElementById('program').hidden`) {
				t.Fatal("the plain textarea still shows beside the editor")
			}

			// A typo, typed: a located diagnostic, in the editor and the list.
			typeOver(t, ctx, `"hall_light.set"`, `"hall_lite.set"`)
			settled(t, ctx, "the diagnostic at the typo", `[...document.querySelectorAll('.cm-lintRange-error')].some(e => e.textContent.includes('hall_lite.set'))`)
			settled(t, ctx, "the diagnostic in the list", `document.querySelector('#ed-diags a[data-path="/steps/0/call"]')`)
			snap(t, ctx, shot.dir, "editor-diagnostic-"+vp.name)

			// Following the diagnostic selects the value; typing fixes it.
			do(t, ctx, "follow the diagnostic", chromedp.Focus(chromedp.CSS(`#ed-diags a[data-path="/steps/0/call"]`)), pressEnter())
			waitJS(t, ctx, "the editor focused", `document.activeElement.classList.contains('cm-content')`)
			if sel := eval[string](t, ctx, `(v => v.state.sliceDoc(v.state.selection.main.from, v.state.selection.main.to))(document.getElementById('program-editor').pilotView)`); sel != `"hall_lite.set"` {
				t.Fatalf("the diagnostic selected %q; %s", sel, eval[string](t, ctx, `(v => JSON.stringify(v.state.selection.main) + ' ' + JSON.stringify(v.state.doc.toString().slice(v.state.doc.toString().indexOf('"on"') - 10, v.state.doc.toString().indexOf('"on"') + 60)))(document.getElementById('program-editor').pilotView)`))
			}
			do(t, ctx, "retype", chromedp.KeyEvent(`"hall_light.set"`))
			settled(t, ctx, "valid again", `document.getElementById('ed-valid') && !document.querySelector('.cm-lintRange-error')`)
			settled(t, ctx, "the plan with its risk", `document.querySelector('#ed-plan .risk-control')`)

			// A test run with the recipe's scenario.
			do(t, ctx, "test run", chromedp.Click(chromedp.CSS(`button[value="test"]`)))
			settled(t, ctx, "the test run's steps", `document.querySelector('#ed-test') && document.querySelector('#ed-test').textContent.includes('success') && document.querySelectorAll('#ed-test ol.timeline li').length >= 2`)
			snap(t, ctx, shot.dir, "editor-test-"+vp.name)

			// Deploy, then edit and deploy a second version.
			do(t, ctx, "deploy", chromedp.Click(chromedp.CSS("#deploy")), chromedp.WaitVisible(chromedp.CSS("#edit-rule")))
			first := installedRef(t, a, "hall-motion-light")
			// Clicked in one evaluation: the rule page's live parts may
			// replace the link between a lookup and a click.
			waitJS(t, ctx, "the Edit link clicked", `(e => e ? (e.click(), true) : false)(document.getElementById('edit-rule'))`)
			do(t, ctx, "edit", chromedp.WaitVisible(chromedp.CSS(".cm-content")))
			settled(t, ctx, "the rule validated", `document.getElementById('ed-valid')`)
			typeOver(t, ctx, `"default": 180`, `"default": 200`)
			settled(t, ctx, "the edit validated: it would replace the installed rule", `document.getElementById('ed-valid') && document.querySelector('#ed-diags a[data-path="/name"]')`)
			snap(t, ctx, shot.dir, "editor-edit-"+vp.name)
			do(t, ctx, "deploy the edit", chromedp.Click(chromedp.CSS("#deploy")), chromedp.WaitVisible(chromedp.CSS("#edit-rule")))
			if second := installedRef(t, a, "hall-motion-light"); second == first {
				t.Fatalf("the edit did not install a new version: %s", second)
			}

			// Versions: both listed, compared, and the first restored.
			do(t, ctx, "versions", chromedp.WaitVisible(chromedp.CSS(`#versions li[data-ref="`+first+`"]`)))
			if n := eval[int](t, ctx, `document.querySelectorAll('#versions li').length`); n != 2 {
				t.Fatalf("%d versions listed, want 2", n)
			}
			noSideways(t, ctx, "the rule page")
			snap(t, ctx, shot.dir, "rule-versions-"+vp.name)
			waitJS(t, ctx, "Compare clicked", `(e => e ? (e.click(), true) : false)(document.getElementById('compare-versions'))`)
			do(t, ctx, "compare", chromedp.WaitVisible(chromedp.CSS("#diff")))
			if del, add := eval[string](t, ctx, `document.querySelector('#diff .ddel').textContent`), eval[string](t, ctx, `document.querySelector('#diff .dadd').textContent`); !strings.Contains(del, "180") || !strings.Contains(add, "200") {
				t.Fatalf("diff: - %q + %q", del, add)
			}
			noSideways(t, ctx, "the diff page")
			snap(t, ctx, shot.dir, "rule-diff-"+vp.name)
			do(t, ctx, "the rule page", chromedp.Navigate(base+"/rules/hall-motion-light"))
			waitJS(t, ctx, "Restore clicked", `(e => e ? (e.click(), true) : false)(document.querySelector('#versions li[data-ref="`+first+`"] button.restore'))`)
			do(t, ctx, "restore the first", chromedp.WaitVisible(chromedp.CSS(`#versions li[data-ref="`+first+`"] .st-ok`)))
			if got := installedRef(t, a, "hall-motion-light"); got != first {
				t.Fatalf("after restore the rule runs %s, want %s", got, first)
			}
			if txt := eval[string](t, ctx, `document.querySelector('.flash').textContent`); !strings.Contains(txt, "Restored") {
				t.Fatalf("restore flash: %q", txt)
			}
		})
	}
}

// snap saves a full-page screenshot at the current viewport (shots.take
// would switch to both widths and back to desktop).
func snap(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// settled waits until the editor has the answer about its current text
// (no request in flight or due) and cond holds.
func settled(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	waitJS(t, ctx, what, `document.getElementById('ed-results').getAttribute('aria-busy') === 'false' && (`+cond+`)`)
}

// noSideways fails when the page is wider than the window.
func noSideways(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	if over := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("%s scrolls sideways by %d px", what, over)
	}
}

// pressEnter presses Enter as a keyboard does: one key-down carrying its
// text, so a handler that prevents its default keeps it from typing.
// (chromedp.KeyEvent sends the text as a separate char event, which
// reaches whatever has the focus by then.)
func pressEnter() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		k := input.DispatchKeyEventParams{Type: kb.KeyDown, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r"}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, k); err != nil {
			return err
		}
		k.Type, k.Text, k.UnmodifiedText = kb.KeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, k)
		return err
	})
}

// typeOver selects the first occurrence of old in the editor and types
// repl over it with key events, as a user would.
func typeOver(t *testing.T, ctx context.Context, old, repl string) {
	t.Helper()
	js := `(v => { const i = v.state.doc.toString().indexOf(` + strconv.Quote(old) + `); if (i < 0) return false;
		v.dispatch({selection: {anchor: i, head: i + ` + strconv.Itoa(len(old)) + `}}); v.focus(); return true; })(document.getElementById('program-editor').pilotView)`
	if !eval[bool](t, ctx, js) {
		t.Fatalf("the editor has no %s", old)
	}
	do(t, ctx, "type "+repl, chromedp.KeyEvent(repl))
}

func installedRef(t *testing.T, a *app, name string) string {
	t.Helper()
	ri, err := a.eng.GetRule(context.Background(), name, 0)
	if err != nil {
		t.Fatalf("rule %s: %v", name, err)
	}
	return ri.ProgramRef
}

// TestEditorKeepsADeploysAnswer: a risky deploy from the editor answers
// "approval pending"; the editor, mounting on that answer, validated at
// once and replaced it with "Valid" within a second, so the deploy looked
// as if nothing had happened (a new user clicked Deploy six times). The
// answer now stays until the text changes.
func TestEditorKeepsADeploysAnswer(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	ctx := browser(t)
	prog := `{"name": "night-lock", "triggers": [{"id": "night", "at": "23:00"}], "steps": [{"id": "lock", "call": "front_lock.set", "args": {"state": "LOCK"}}]}`
	do(t, ctx, "editor", chromedp.Navigate(a.URL()+"/editor"), chromedp.WaitVisible(chromedp.CSS(".cm-content")))
	eval[bool](t, ctx, `(v => { v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: `+strconv.Quote(prog)+`}}); return true; })(document.getElementById('program-editor').pilotView)`)
	settled(t, ctx, "the lock rule validated", `document.getElementById('ed-valid') && document.querySelector('#ed-plan .risk-security')`)
	do(t, ctx, "deploy", chromedp.Click(chromedp.CSS("#deploy")), chromedp.WaitVisible(chromedp.CSS("#ed-approval")),
		chromedp.WaitVisible(chromedp.CSS(".cm-content")))
	waitJS(t, ctx, "no answer awaited", `document.getElementById('ed-results').getAttribute('aria-busy') !== 'true'`)
	if !eval[bool](t, ctx, `!!document.querySelector('#ed-approval a[href^="/approvals/"]')`) {
		t.Fatalf("the approval notice is gone: %s", eval[string](t, ctx, `document.getElementById('ed-results').textContent`))
	}
	typeOver(t, ctx, `"night-lock"`, `"night-lock-2"`)
	settled(t, ctx, "an edit validates again", `document.getElementById('ed-valid') && !document.getElementById('ed-approval')`)
}
