#!/bin/sh
# The official eclipse-mosquitto entrypoint's behaviour: as root, hand
# /mosquitto to the mosquitto user (bind mounts that are read-only stay as
# they are), then run the command.
set -e
if [ "$(id -u)" = '0' ]; then
	[ -d /mosquitto ] && chown -R mosquitto:mosquitto /mosquitto 2>/dev/null || true
fi
exec "$@"
