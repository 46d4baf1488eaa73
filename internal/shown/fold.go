package shown

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// lookAlike maps letters and digits a person reads as a lowercase Latin
// letter to that letter: the common Cyrillic and Greek homoglyphs of both
// cases (an uppercase one maps to what its Latin twin folds to, so
// Cyrillic 'Н' is 'h'), and the ASCII capital I and digits 1 and 0 that
// many fonts draw as 'l' and 'o'.
var lookAlike = map[rune]rune{
	'I': 'l', '1': 'l', '0': 'o', 'ı': 'i',
	// Cyrillic.
	'а': 'a', 'А': 'a', 'В': 'b', 'Ь': 'b', 'с': 'c', 'С': 'c', 'ԁ': 'd', 'е': 'e', 'Е': 'e', 'ё': 'ë', 'Ё': 'ë',
	'һ': 'h', 'Н': 'h', 'і': 'i', 'І': 'l', 'ї': 'ï', 'Ї': 'ï', 'ј': 'j', 'Ј': 'j', 'К': 'k', 'М': 'm',
	'о': 'o', 'О': 'o', 'р': 'p', 'Р': 'p', 'ԛ': 'q', 'ѕ': 's', 'Ѕ': 's', 'Т': 't', 'ԝ': 'w', 'Ԝ': 'w',
	'х': 'x', 'Х': 'x', 'у': 'y', 'Ү': 'y', 'ү': 'y', 'Ѵ': 'v', 'ѵ': 'v', 'ӏ': 'l', 'Ӏ': 'l',
	// Greek.
	'Α': 'a', 'α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'Ι': 'l', 'ι': 'i', 'Κ': 'k', 'κ': 'k',
	'Μ': 'm', 'Ν': 'n', 'ν': 'v', 'Ο': 'o', 'ο': 'o', 'Ρ': 'p', 'ρ': 'p', 'Τ': 't', 'Υ': 'y', 'υ': 'u',
	'Χ': 'x', 'χ': 'x',
}

// Fold is the form under which two names a person cannot tell apart are
// equal: characters not shown as themselves dropped, NFKC (fullwidth and
// ligature forms as their plain letters), look-alikes as the Latin letter
// they pass for, and Unicode case folding.
func Fold(s string) string {
	rs := []rune(s)
	var b strings.Builder
	each(rs, func(i int, ok bool) bool {
		if ok {
			b.WriteRune(rs[i])
		}
		return true
	})
	// Twice: the look-alike pass before folding keeps 'I' from becoming
	// 'i', the one after catches a lowercase homoglyph folding made.
	f := mapLookAlikes(cases.Fold().String(mapLookAlikes(norm.NFKC.String(b.String()))))
	return separators(lookAlikePairs.Replace(f))
}

// lookAlikePairs are letter pairs a person reads as one letter.
var lookAlikePairs = strings.NewReplacer("rn", "m", "vv", "w")

// separators drops the characters that separate words in a name ('-',
// '_', '.', spaces): "owner_lock", "owner--lock", "owner-lock." and
// "ownerlock" read as the same name as "owner-lock".
func separators(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' || r == '.' || unicode.IsSpace(r) }), "")
}

func mapLookAlikes(s string) string {
	return strings.Map(func(r rune) rune {
		if l, ok := lookAlike[r]; ok {
			return l
		}
		return r
	}, s)
}
