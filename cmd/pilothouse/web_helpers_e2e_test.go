package main

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWebHelperFormShowsItsKindsFields: in a real browser the new-helper
// form shows only the fields the chosen kind takes, from the helpers'
// kinds table, and a refused create comes back with the fields as typed.
func TestWebHelperFormShowsItsKindsFields(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	ctx := browser(t)
	do(t, ctx, "helpers page", chromedp.Navigate(a.URL()+"/helpers"), chromedp.WaitVisible(chromedp.CSS("#h-create")))
	shown := func(id string) string {
		return `!document.getElementById('` + id + `').closest('[data-kinds]').hidden`
	}
	for _, tc := range []struct{ kind, visible, hidden string }{
		{"flag", "h-initial", "h-min"},
		{"number", "h-unit", "h-options"},
		{"choice", "h-options", "h-duration"},
		{"datetime", "h-mode", "h-maxlen"},
		{"timer", "h-duration", "h-initial"},
	} {
		eval[bool](t, ctx, `(function () { var k = document.getElementById('h-kind'); k.value = '`+tc.kind+`';
			return k.dispatchEvent(new Event('change')); })()`)
		waitJS(t, ctx, tc.kind+" shows "+tc.visible+" and hides "+tc.hidden, shown(tc.visible)+` && !(`+shown(tc.hidden)+`)`)
	}
	eval[bool](t, ctx, `(function () { document.getElementById('h-id').value = 'tea';
		document.getElementById('h-duration').value = 'PT0.001S'; return true; })()`)
	do(t, ctx, "a refused timer", chromedp.Click(chromedp.CSS("#h-create")))
	waitJS(t, ctx, "the refusal with the fields as typed", `document.querySelector('.flash') && document.querySelector('.flash').textContent.indexOf('Refused') >= 0 &&
		document.getElementById('h-id').value === 'tea' && document.getElementById('h-kind').value === 'timer' &&
		document.getElementById('h-duration').value === 'PT0.001S' && `+shown("h-duration")+` && !(`+shown("h-min")+`)`)
}
