package clock

import "testing"

func TestCronWords(t *testing.T) {
	for spec, want := range map[string]string{
		"0 30 6 * * 1-5": "At 06:30 on Monday to Friday (cron 0 30 6 * * 1-5)",
		"0 0 8 * * 0,6":  "At 08:00 on Sunday and Saturday (cron 0 0 8 * * 0,6)",
		"0 30 18 * * *":  "Every day at 18:30 (cron 0 30 18 * * *)",
		"0 */10 * * * *": "Every 10 minutes (cron 0 */10 * * * *)",
		"0 15 * * * *":   "Every hour at 15 past (cron 0 15 * * * *)",
		"30 7 * * *":     "Every day at 07:30 (cron 30 7 * * *)",
		"@hourly":        "Every hour (cron @hourly)",
		"@every 90s":     "Every 1 minute and 30 seconds (cron @every 90s)",
		"0 0 12 1 * *":   "On the cron schedule 0 0 12 1 * *",
		"15 30 6 * * *":  "On the cron schedule 15 30 6 * * *",
		"0 0-30 6 * * *": "On the cron schedule 0 0-30 6 * * *",
		"0 30 6 * * 1-3": "On the cron schedule 0 30 6 * * 1-3",
	} {
		if got := CronWords(spec); got != want {
			t.Errorf("%q: %q, want %q", spec, got, want)
		}
	}
}
