package clock

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"strconv"
	"strings"
	"time"
)

// cronWords says a cron spec in words when it is one of the common shapes
// ("Every day at 06:30 on Monday to Friday", "Every 10 minutes", "Every
// hour"), with the spec after it for precision; other specs are named as
// they are.
func CronWords(spec string) string {
	if w, ok := cronShape(spec); ok {
		return w + " (cron " + spec + ")"
	}
	return "On the cron schedule " + spec
}

var cronMacros = map[string]string{
	"@yearly": "Every year on 1 January at 00:00", "@annually": "Every year on 1 January at 00:00",
	"@monthly": "Every month on the 1st at 00:00", "@weekly": "Every Sunday at 00:00",
	"@daily": "Every day at 00:00", "@midnight": "Every day at 00:00", "@hourly": "Every hour",
}

func cronShape(spec string) (string, bool) {
	if w, ok := cronMacros[spec]; ok {
		return w, true
	}
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		dur, err := time.ParseDuration(d)
		return "Every " + HumanDuration(dur), err == nil && dur > 0
	}
	f := strings.Fields(spec)
	if len(f) == 5 {
		f = append([]string{"0"}, f...)
	}
	if len(f) != 6 || f[3] != "*" || f[4] != "*" {
		return "", false
	}
	sec, min, hour, dow := f[0], f[1], f[2], f[5]
	days, ok := cronDays(dow)
	if !ok || sec != "0" {
		return "", false
	}
	if n, ok := strings.CutPrefix(min, "*/"); ok && hour == "*" && dow == "*" {
		if k, err := strconv.Atoi(n); err == nil && k > 0 {
			return "Every " + core.Plural(k, "minute", ""), true
		}
	}
	m, errM := strconv.Atoi(min)
	if hour == "*" && errM == nil && m >= 0 && m < 60 {
		return "Every hour at " + strconv.Itoa(m) + " past" + days, true
	}
	h, errH := strconv.Atoi(hour)
	if errM != nil || errH != nil || m < 0 || m > 59 || h < 0 || h > 23 {
		return "", false
	}
	at := strconv.Itoa(100 + h)[1:] + ":" + strconv.Itoa(100 + m)[1:]
	if days == "" {
		return "Every day at " + at, true
	}
	return "At " + at + days, true
}

// cronDays is a day-of-week field in words (" on Monday to Friday", " on
// Saturday and Sunday"; "" for every day).
func cronDays(dow string) (string, bool) {
	switch dow {
	case "*", "?":
		return "", true
	case "1-5", "MON-FRI", "mon-fri":
		return " on Monday to Friday", true
	}
	var names []string
	for _, d := range strings.Split(dow, ",") {
		i, err := strconv.Atoi(d)
		if err != nil || i < 0 || i > 7 {
			return "", false
		}
		names = append(names, time.Weekday(i%7).String())
	}
	return " on " + core.JoinList(names, "and"), true
}
