#!/usr/bin/env bash
# compose-test: the Docker quick start, for real. In a copy of this working
# tree it runs the README's "Quick start: Docker" blocks as written (.env,
# Mosquitto's passwd file, docker compose up -d), waits for both health
# checks, then does what a user does: applies a rule over MCP with the
# owner's token (the CLI inside the container), publishes a Zigbee2MQTT
# device on Mosquitto and a motion message, sees the light's command on the
# broker and the firing in "pilothouse rules", restarts the pilothouse
# service and sees the rule still enabled and firing, and takes it all down.
#
# Base images that are not present locally are replaced by stand-ins built
# from Debian packages (deploy/standins/README.md): nothing is pulled.
#
# Exit status: 0 passed; 77 Docker cannot run here (no docker client, no
# dockerd, or dockerd will not start: nothing was tested); anything else
# failed. One line per step on stdout; on failure the step, the containers'
# state and their logs.
#
# Environment: KEEP_STANDINS=1 keeps the stand-in images (the next
# run reuses them); COMPOSE_TEST_TIMEOUT (seconds, default 240) bounds each
# wait for health.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
t0=$(date +%s)
say() { printf 'compose-test [%4ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
skip() {
  say "SKIPPED: $*"
  say "SKIPPED: the Docker stack was NOT tested on this machine"
  exit 77
}
health_timeout=${COMPOSE_TEST_TIMEOUT:-240}

# ------------------------------------------------------------- cleanup
# Everything a run creates is removed when it ends, whatever the outcome:
# the compose project (containers, network, volumes), the images (found by
# comparing the image list before and after), the copy of the tree, and
# dockerd if it started it.
work=$(mktemp -d /tmp/pilothouse-compose-test.XXXXXX)
started_dockerd=
dockerd_pid=
compose=()
project=pilothouse-compose-test-$$
export COMPOSE_PROJECT_NAME=$project
src=$work/pilothouse
step=setup
base=pilothouse-standin/debian:bookworm
standins=("$base" eclipse-mosquitto:2 golang:1.26 gcr.io/distroless/static-debian12:nonroot)
standin() { [ "$(docker image inspect -f '{{index .Config.Labels "org.pilothouse.standin"}}' "$1" 2>/dev/null)" = 1 ]; }
present() { docker image inspect "$1" >/dev/null 2>&1; }

cleanup() {
  local rc=$?
  set +eu
  trap - EXIT
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
    say "FAILED at step: $step (exit $rc)"
    if [ -f "$src/docker-compose.yml" ] && [ ${#compose[@]} -gt 0 ]; then
      (cd "$src" && "${compose[@]}" ps) 2>&1 | sed 's/^/  ps: /'
      (cd "$src" && "${compose[@]}" logs --no-color --tail=60) 2>&1 | sed 's/^/  log: /'
    fi
    [ -s "$work/up.log" ] && tail -n 40 "$work/up.log" | sed 's/^/  up: /'
  fi
  if [ -f "$src/docker-compose.yml" ] && [ ${#compose[@]} -gt 0 ]; then
    (cd "$src" && "${compose[@]}" down -v --rmi local --remove-orphans) >"$work/down.log" 2>&1 ||
      { say "docker compose down failed:"; sed 's/^/  down: /' "$work/down.log"; }
  fi
  [ -f "$work/images.before" ] && remove_new_images
  if [ -f "$work/volumes.before" ]; then # anonymous ones too (the images' VOLUMEs)
    docker volume ls -q | sort -u | comm -13 "$work/volumes.before" - | xargs -r docker volume rm >/dev/null 2>&1
  fi
  rm -rf "$work"
  if [ -n "$started_dockerd" ]; then
    kill "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.2; done
    wait "$dockerd_pid" 2>/dev/null
    say "stopped dockerd"
  fi
  if [ "$rc" = 0 ]; then
    say "PASSED in $(($(date +%s) - t0)) s"
  elif [ "$rc" != 77 ]; then
    say "FAILED in $(($(date +%s) - t0)) s"
  fi
  exit "$rc"
}
remove_new_images() {
  local keep=() new i pass left
  docker images -aq --no-trunc | sort -u >"$work/images.after"
  new=$(comm -13 "$work/images.before" "$work/images.after")
  if [ "${KEEP_STANDINS:-}" = 1 ]; then
    for i in "${standins[@]}"; do standin "$i" && keep+=("$(docker image inspect -f '{{.Id}}' "$i")"); done
  fi
  # Children before parents: a few passes settle any order.
  for pass in 1 2 3 4 5; do
    left=()
    for i in $new; do
      [[ " ${keep[*]} " == *" $i "* ]] && continue
      docker image inspect "$i" >/dev/null 2>&1 || continue
      docker rmi -f "$i" >/dev/null 2>&1 || left+=("$i")
    done
    [ ${#left[@]} = 0 ] && break
    new=${left[*]}
  done
  if [ "${KEEP_STANDINS:-}" != 1 ]; then
    # Stand-ins an earlier KEEP_STANDINS=1 run left go too.
    for i in "${standins[@]:1}" "$base"; do standin "$i" && docker rmi "$i" >/dev/null 2>&1; done
  fi
  say "removed the images this run created$([ "${KEEP_STANDINS:-}" = 1 ] && echo ' (kept the stand-ins: KEEP_STANDINS=1)')"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- Docker
command -v docker >/dev/null 2>&1 || skip "no docker client (apt-get install docker.io docker-compose)"
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null 2>&1 || skip "docker cannot reach an engine and there is no dockerd"
  [ "$(id -u)" = 0 ] || skip "docker cannot reach an engine and only root can start dockerd"
  dockerd --storage-driver=overlay2 --exec-opt native.cgroupdriver=cgroupfs \
    >"$work/dockerd.log" 2>&1 &
  dockerd_pid=$!
  started_dockerd=1
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    tail -n 15 "$work/dockerd.log" | sed 's/^/  dockerd: /'
    # Running but not answering is a failure, not "cannot run".
    kill -0 "$dockerd_pid" 2>/dev/null && { say "dockerd started but did not answer within 60 s (above: the end of its log)"; exit 1; }
    started_dockerd=
    skip "dockerd will not start here (above: the end of its log)"
  fi
  say "started dockerd (pid $dockerd_pid): $(docker version -f 'engine {{.Server.Version}}, {{.Server.Os}}/{{.Server.Arch}}' 2>/dev/null)"
else
  say "using the running Docker engine $(docker version -f '{{.Server.Version}}' 2>/dev/null)"
fi

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  say "Docker runs, but there is neither the compose plugin nor docker-compose"
  exit 1
fi
say "compose: ${compose[*]} ($("${compose[@]}" version --short 2>/dev/null || echo '?'))"
docker images -aq --no-trunc | sort -u >"$work/images.before"
docker volume ls -q | sort -u >"$work/volumes.before"

# A run that was killed leaves its project behind, and "restart:
# unless-stopped" brings it back with the engine: remove it first.
stale_projects=$(docker ps -aq | xargs -r docker inspect -f '{{index .Config.Labels "com.docker.compose.project"}}' |
  grep -E '^pilothouse-compose-test-[0-9]+$' | sort -u || true)
stale_volumes=$(docker volume ls -q | grep -E '^pilothouse-compose-test-[0-9]+_' || true)
if [ -n "$stale_projects$stale_volumes" ]; then
  for p in $stale_projects; do
    docker ps -aq --filter "label=com.docker.compose.project=$p" | xargs -r docker rm -f >/dev/null
  done
  [ -z "$stale_volumes" ] || docker volume rm $stale_volumes >/dev/null
  docker network ls -q --filter name=pilothouse-compose-test- | xargs -r docker network rm >/dev/null 2>&1 || true
  docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^pilothouse-compose-test-[0-9]+[_-]pilothouse:' |
    xargs -r docker rmi >/dev/null 2>&1 || true
  say "removed what an interrupted earlier run left: $(echo $stale_projects $stale_volumes | wc -w) project(s)/volume(s)"
fi

# ------------------------------------------------------------ stand-ins

debian_mirror() {
  # The machine's own Debian mirror, http first (minbase has no CA bundle).
  {
    grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
      sed -E 's/\[[^]]*\]//' | awk '{print $2}'
    grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | sed -E 's/^URIs:[[:space:]]*//' | tr ' ' '\n'
  } | grep -E '^https?://[^ ]*/debian/?$' | sort -r | head -n 1
}

make_base() {
  command -v debootstrap >/dev/null 2>&1 || { say "debootstrap is not installed (apt-get install debootstrap)"; return 1; }
  local mirror s
  mirror=$(debian_mirror)
  mirror=${mirror:-http://deb.debian.org/debian}
  s=$(date +%s)
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log"; return 1; }
  # As in Debian's own images: no service starts inside a build.
  printf '#!/bin/sh\nexit 101\n' >"$work/rootfs/usr/sbin/policy-rc.d"
  chmod 755 "$work/rootfs/usr/sbin/policy-rc.d"
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'LABEL org.pilothouse.standin=1' --change 'CMD ["bash"]' - "$base" >/dev/null
  rm -rf "$work/rootfs"
  say "base rootfs: debootstrap --variant=minbase bookworm $mirror, docker import as $base ($(($(date +%s) - s)) s)"
}

build_standin() { # tag context-dir
  local log=$work/build.${1//[\/:]/_}.log
  docker build -q -t "$1" "$2" >"$log" 2>&1 || { tail -n 30 "$log"; return 1; }
}

mosquitto_standin() {
  local s=$(date +%s)
  build_standin eclipse-mosquitto:2 "$repo/deploy/standins/mosquitto"
  say "stand-in eclipse-mosquitto:2: Debian's $(docker run --rm --entrypoint /usr/sbin/mosquitto eclipse-mosquitto:2 -h 2>/dev/null | head -n 1), uid $(docker run --rm eclipse-mosquitto:2 id -u mosquitto) ($(($(date +%s) - s)) s)"
}

golang_context() { # runs beside debootstrap: host work only
  local ctx=$work/golang goroot
  goroot=$(go env GOROOT)
  mkdir -p "$ctx/mod/cache"
  cp "$repo/deploy/standins/golang/Dockerfile" "$ctx/"
  cp -al "$goroot" "$ctx/go" 2>/dev/null || cp -a "$goroot" "$ctx/go"
  # The modules the Dockerfile's "go mod download" and "go build" need,
  # from the host's module cache (the Go proxy only for what it lacks).
  # Only their downloads (cache/download: zips, go.mod files) go in the
  # image, as a proxy would serve them: the build's "go mod download"
  # extracts them as it would after fetching.
  (cd "$repo" && GOMODCACHE="$work/modfull" GOFLAGS=-modcacherw \
    GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" \
    sh -c 'go mod download && go list -deps ./cmd/pilothouse >/dev/null') >"$work/gomod.log" 2>&1 ||
    { cat "$work/gomod.log"; return 1; }
  mv "$work/modfull/cache/download" "$ctx/mod/cache/"
  rm -rf "$work/modfull"
}

golang_standin() {
  local ctx=$work/golang mods s=$(date +%s)
  mods=$(du -sh "$ctx/mod" | cut -f1)
  build_standin golang:1.26 "$ctx"
  rm -rf "$ctx"
  say "stand-in golang:1.26: the host's $(docker run --rm golang:1.26 go version | cut -d' ' -f3-), the downloads of go.mod's modules ($mods), GOPROXY=off ($(($(date +%s) - s)) s)"
}

distroless_standin() {
  local ctx=$work/distroless r
  r=$ctx/root
  mkdir -p "$r/etc/ssl/certs" "$r/tmp" "$r/usr/share" "$ctx/home/nonroot"
  cp "$repo/deploy/standins/distroless/Dockerfile" "$ctx/"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >"$r/etc/group"
  printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
  chmod 1777 "$r/tmp"
  chmod 700 "$ctx/home/nonroot"
  cp -a /usr/share/zoneinfo "$r/usr/share/"
  cp -L /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/" 2>/dev/null || true
  build_standin gcr.io/distroless/static-debian12:nonroot "$ctx"
  rm -rf "$ctx"
  say "stand-in gcr.io/distroless/static-debian12:nonroot: FROM scratch, user $(docker image inspect -f '{{.Config.User}}' gcr.io/distroless/static-debian12:nonroot), no shell"
}

step="base images"
todo=()
for img in "${standins[@]:1}"; do
  if ! present "$img"; then
    todo+=("$img")
  elif standin "$img"; then
    say "$img: stand-in from an earlier run"
  else
    say "$img: the real image, already present"
  fi
done
# The slow parts side by side: debootstrap with the Go context, then the
# three builds.
jobs_=()
need() { [[ " ${todo[*]-} " == *" $1 "* ]]; }
need golang:1.26 && { golang_context & jobs_+=($!); }
need gcr.io/distroless/static-debian12:nonroot && { distroless_standin & jobs_+=($!); }
if need golang:1.26 || need eclipse-mosquitto:2; then
  if present "$base"; then say "base rootfs: $base (stand-in from an earlier run)"; else make_base; fi
fi
for j in "${jobs_[@]}"; do wait "$j"; done
jobs_=()
need golang:1.26 && { golang_standin & jobs_+=($!); }
need eclipse-mosquitto:2 && { mosquitto_standin & jobs_+=($!); }
for j in "${jobs_[@]}"; do wait "$j"; done

# ----------------------------------------------------- the README's setup
step="copy of the working tree"
mkdir -p "$src"
# Tracked and untracked files, less what git ignores (so never a .env or a
# passwd file of this checkout): a repository root of its own.
if git rev-parse --git-dir >/dev/null 2>&1; then
  (git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$src" -xf -
else # an exported tree: everything but the secrets
  tar --exclude=./.git --exclude=./.env --exclude=./deploy/mosquitto/passwd -cf - . | tar -C "$src" -xf -
fi
cd "$src"
[ ! -e .env ] && [ ! -e deploy/mosquitto/passwd ] || { say ".env or passwd reached the copy: they must be ignored"; exit 1; }
say "copied the working tree to $src (compose project $project)"

readme_block() { # marker: the first ```sh block after the line holding it
  awk -v m="$1" 'index($0, m) {f=1; next} f && /^```sh/ {b=1; next} b && /^```/ {exit} b {print}' README.md
}
dc() { "${compose[@]}" "$@"; }
as_user_types() { # the README says "docker compose"; Compose 1.29 is "docker-compose"
  if [ "${compose[*]}" = docker-compose ]; then sed 's/docker compose /docker-compose /g'; else cat; fi
}

step="README setup block (.env, passwd)"
readme_block 'compose-test:setup' >"$work/setup.sh"
[ -s "$work/setup.sh" ] || { say "the README has no compose-test:setup block"; exit 1; }
as_user_types <"$work/setup.sh" | bash -euo pipefail >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
[ -f deploy/mosquitto/passwd ] || { say "the setup block made no deploy/mosquitto/passwd file"; exit 1; }
say "README setup: .env ($(stat -c '%a' .env)), deploy/mosquitto/passwd ($(stat -c '%a uid %u' deploy/mosquitto/passwd))"

# Published ports: the compose file's defaults (127.0.0.1:8080, :1883)
# unless something here already listens there.
busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_port=8080 mqtt_port=1883
if busy 8080; then http_port=$(free_port); export PILOTHOUSE_PUBLISH_HTTP=127.0.0.1:$http_port; fi
if busy 1883; then mqtt_port=$(free_port); export PILOTHOUSE_PUBLISH_MQTT=127.0.0.1:$mqtt_port; fi
[ "$http_port$mqtt_port" = 80801883 ] || say "8080 or 1883 is taken here: publishing on 127.0.0.1:$http_port and 127.0.0.1:$mqtt_port (PILOTHOUSE_PUBLISH_HTTP/MQTT)"

step="secrets stay out of git and the image build"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  for f in .env deploy/mosquitto/passwd; do
    git -C "$repo" check-ignore -q "$f" || { say "git does not ignore $f"; exit 1; }
  done
fi
# What the Dockerfile's "COPY . ." sees: the same context, copied whole.
ctx_image=$(printf 'FROM scratch\nCOPY . /ctx/\n' | docker build -q -f - . 2>"$work/ctx.log" | tail -n 1) ||
  { cat "$work/ctx.log"; exit 1; }
ctx_box=$(docker create "$ctx_image" none)
leaked=$(docker export "$ctx_box" | tar -t | grep -E '^ctx/(\.env|deploy/mosquitto/passwd)$' || true)
docker rm "$ctx_box" >/dev/null
docker rmi "$ctx_image" >/dev/null
[ -z "$leaked" ] || { say "the build context holds secrets: $leaked"; exit 1; }
say "git ignores .env and deploy/mosquitto/passwd; the build context leaves both out"

step="README up block (docker compose up -d: build and start)"
readme_block 'compose-test:up' >"$work/up.sh"
s=$(date +%s)
as_user_types <"$work/up.sh" | bash -euo pipefail >"$work/up.log" 2>&1
say "README up: $(as_user_types <"$work/up.sh" | grep -v '^#' | sed 's/ *#.*//' | paste -sd';' | sed 's/;/; /g') ($(($(date +%s) - s)) s, image built)"

# ------------------------------------------------------------ as a user
cid() { dc ps -q "$1"; }
wait_healthy() { # service...
  local deadline=$(($(date +%s) + health_timeout)) svc st all
  while :; do
    all=1
    for svc in "$@"; do
      st=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}no-healthcheck{{end}}/{{.State.Status}}/{{.RestartCount}}' "$(cid "$svc")" 2>/dev/null || echo missing)
      case $st in
        healthy/running/*) ;;
        */exited/* | */dead/* | missing) say "$svc is $st"; return 1 ;;
        *) all= ;;
      esac
    done
    [ -n "$all" ] && return 0
    [ "$(date +%s)" -lt "$deadline" ] || { say "not healthy within ${health_timeout}s: $st"; return 1; }
    sleep 1
  done
}
ph() { dc exec -T pilothouse /pilothouse "$@"; }
mq() { dc exec -T mosquitto sh -c "$1"; } # runs with the container's PILOTHOUSE_MQTT_PASSWORD
pub() { mq "mosquitto_pub -u pilothouse -P \"\$PILOTHOUSE_MQTT_PASSWORD\" -t '$1' -m '$2'" </dev/null; }
until_ok() { # seconds description command...: retry until it succeeds
  local deadline=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@" >"$work/last.out" 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { say "gave up waiting for: $what"; sed 's/^/  /' "$work/last.out"; return 1; }
    sleep 0.5
  done
}

step="health checks"
s=$(date +%s)
wait_healthy mosquitto pilothouse
say "healthy: mosquitto and pilothouse ($(($(date +%s) - s)) s after up returned)"

step="published ports"
ports=$(docker port "$(cid pilothouse)" 8080/tcp; docker port "$(cid mosquitto)" 1883/tcp)
if grep -qv '^127\.0\.0\.1:' <<<"$ports"; then say "a port is published beyond loopback: $ports"; exit 1; fi
curl -fsS "http://127.0.0.1:$http_port/healthz" >"$work/healthz" || { say "GET http://127.0.0.1:$http_port/healthz from the host failed"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' "http://127.0.0.1:$http_port/mcp")
[ "$code" = 401 ] || { say "/mcp without a token answered $code, want 401"; exit 1; }
say "published on loopback only ($(paste -sd' ' <<<"$ports")); /healthz answers the host; /mcp without a token: 401"

step="a Zigbee2MQTT device list on Mosquitto"
mq 'mosquitto_pub -u pilothouse -P "$PILOTHOUSE_MQTT_PASSWORD" -r -t zigbee2mqtt/bridge/devices -s' \
  <"$repo/deploy/compose-test/zigbee2mqtt-bridge-devices.json"
pub zigbee2mqtt/hall_motion '{"occupancy":false,"illuminance":52,"battery":100,"linkquality":87}'
pub zigbee2mqtt/hall_light '{"state":"OFF","brightness":0,"linkquality":156}'
say "published zigbee2mqtt/bridge/devices (retained: coordinator, hall_motion, hall_light) and their states"

step="apply the rule over MCP (owner token)"
apply() { ph apply /dev/stdin <examples/rules/hall-motion-light.json; }
grep -qF 'docker compose exec -T pilothouse /pilothouse apply /dev/stdin < examples/rules/hall-motion-light.json' README.md ||
  { say "the README no longer shows this apply command"; exit 1; }
until_ok 30 "apply examples/rules/hall-motion-light.json" apply
say "$(grep '^deployed:' "$work/last.out")"

rules() { ph rules </dev/null; }
fire() { # n: motion on; see the command on the broker and the n-th firing
  local n=$1 sub
  # A subscriber to the light's command topic and to a retained marker:
  # once the marker arrives, the subscription is in place.
  mq 'mosquitto_pub -u pilothouse -P "$PILOTHOUSE_MQTT_PASSWORD" -r -t compose-test/ready -m ready' </dev/null
  mq 'mosquitto_sub -u pilothouse -P "$PILOTHOUSE_MQTT_PASSWORD" -t compose-test/ready -t zigbee2mqtt/hall_light/set -v -C 2 -W 30' \
    </dev/null >"$work/sub.$n" 2>&1 &
  sub=$!
  until_ok 15 "the subscriber" grep -q '^compose-test/ready ready' "$work/sub.$n"
  pub zigbee2mqtt/hall_motion '{"occupancy":true,"illuminance":52,"battery":100,"linkquality":87}'
  wait "$sub" || { say "no command on zigbee2mqtt/hall_light/set within 30 s"; cat "$work/sub.$n"; return 1; }
  say "motion on zigbee2mqtt/hall_motion → the command on the broker: $(grep '^zigbee2mqtt/hall_light/set' "$work/sub.$n")"
  until_ok 15 "firing $n in pilothouse rules" count_firings "$n"
  pub zigbee2mqtt/hall_motion '{"occupancy":false,"illuminance":52,"battery":100,"linkquality":87}'
}
count_firings() { rules >"$work/rules.out" 2>&1 && [ "$(grep -c 'fired .*: success' "$work/rules.out")" -ge "$1" ]; }

step="first firing"
fire 1
say "pilothouse rules: $(grep -m1 'hall-motion-light' "$work/rules.out" | xargs); $(grep -c 'fired .*: success' "$work/rules.out") firing(s): $(grep -m1 'fired' "$work/rules.out" | xargs)"

step="restart the pilothouse service"
s=$(date +%s)
dc restart pilothouse >"$work/restart.log" 2>&1
wait_healthy pilothouse
rules >"$work/rules.out"
grep -q '^hall-motion-light  enabled' "$work/rules.out" || { say "after the restart the rule is not enabled:"; cat "$work/rules.out"; exit 1; }
say "restarted pilothouse, healthy again in $(($(date +%s) - s)) s; the rule is still enabled: $(head -n1 "$work/rules.out" | xargs)"

step="firing after the restart"
fire 2
bad=$(grep 'fired ' "$work/rules.out" | grep -v ': success' || true)
[ -z "$bad" ] || { say "a firing did not succeed: $bad"; exit 1; }
say "pilothouse rules after the restart: $(grep -c 'fired .*: success' "$work/rules.out") firings, both success"

step="up without passwd"
# What a user who skipped step 2 gets: Mosquitto stops with a clear error,
# pilothouse does not start, and nothing is created in passwd's place.
dc down -v >/dev/null 2>&1
mv deploy/mosquitto/passwd "$work/passwd.aside"
if timeout 60 "${compose[@]}" up -d >"$work/nopasswd.log" 2>&1; then
  say "up went through without deploy/mosquitto/passwd"
  exit 1
fi
[ ! -e deploy/mosquitto/passwd ] || { say "up without passwd left a $(stat -c %F deploy/mosquitto/passwd) in its place"; exit 1; }
until_ok 20 "Mosquitto's error about the missing passwd" sh -c "$(printf '%q ' "${compose[@]}") logs --no-color mosquitto | grep -q 'Unable to open pwfile'"
[ "$(docker inspect -f '{{.State.Running}}' "$(cid pilothouse)" 2>/dev/null || echo false)" != true ] ||
  { say "pilothouse runs without Mosquitto's passwd"; exit 1; }
dc down -v >/dev/null 2>&1
mv "$work/passwd.aside" deploy/mosquitto/passwd
say "without deploy/mosquitto/passwd: up fails ($(grep -m1 -oE 'is unhealthy|exited \([0-9]+\)|dependency failed[^.]*' "$work/nopasswd.log" || echo 'timed out waiting')), Mosquitto logs \"Unable to open pwfile\", pilothouse stays down, nothing created in its place"

step="docker compose down"
cd "$work"
(cd "$src" && dc down -v --rmi local --remove-orphans) >"$work/down.log" 2>&1
left=$(docker ps -aq --filter "label=com.docker.compose.project=$project"
  docker network ls -q --filter "label=com.docker.compose.project=$project"
  docker volume ls -q | sort -u | comm -13 "$work/volumes.before" -)
[ -z "$left" ] || { say "left after down -v:" $left; exit 1; }
rm -f "$src/docker-compose.yml" # cleanup's own down has nothing left to do
say "docker compose down -v: no container, network or volume left"
step=done
