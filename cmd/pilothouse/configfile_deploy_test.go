package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// repoRoot is where docker-compose.yml lives, seen from this package.
const repoRoot = "../.."

// composeVolume is one entry of a service's volumes, in the short
// ("src:dst[:mode]") or the long (type/source/target) syntax.
type composeVolume struct {
	Type, Source, Target string
	ReadOnly             bool
}

func (v *composeVolume) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		parts := strings.Split(n.Value, ":")
		if len(parts) < 2 {
			return fmt.Errorf("volume %q: want src:dst", n.Value)
		}
		v.Type, v.Source, v.Target = "short", parts[0], parts[1]
		v.ReadOnly = len(parts) > 2 && parts[2] == "ro"
		return nil
	}
	var long struct {
		Type     string `yaml:"type"`
		Source   string `yaml:"source"`
		Target   string `yaml:"target"`
		ReadOnly bool   `yaml:"read_only"`
	}
	if err := n.Decode(&long); err != nil {
		return err
	}
	*v = composeVolume{Type: long.Type, Source: long.Source, Target: long.Target, ReadOnly: long.ReadOnly}
	return nil
}

// composeDependsOn maps each service depended on to its condition ("" in
// the list syntax).
type composeDependsOn map[string]string

func (d *composeDependsOn) UnmarshalYAML(n *yaml.Node) error {
	*d = composeDependsOn{}
	if n.Kind == yaml.SequenceNode {
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		for _, name := range names {
			(*d)[name] = ""
		}
		return nil
	}
	var long map[string]struct {
		Condition string `yaml:"condition"`
	}
	if err := n.Decode(&long); err != nil {
		return err
	}
	for name, c := range long {
		(*d)[name] = c.Condition
	}
	return nil
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	DependsOn   composeDependsOn  `yaml:"depends_on"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []composeVolume   `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// interpolateDefaults replaces ${VAR:-default} by its default, as compose
// does when VAR is unset.
func interpolateDefaults(s string) string {
	for {
		i := strings.Index(s, "${")
		j := strings.Index(s, "}")
		if i < 0 || j < i {
			return s
		}
		_, def, _ := strings.Cut(s[i+2:j], ":-")
		s = s[:i] + def + s[j+1:]
	}
}

// TestDockerCompose checks what can be checked without a Docker engine
// (deploy/compose-test.sh runs the stack for real): the file parses, names
// its services, mounts files that exist, publishes on loopback only, and
// the Pilothouse configuration it mounts loads and passes the startup
// checks.
func TestDockerCompose(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]composeService `yaml:"services"`
		Volumes  map[string]any            `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	mosq, ok := compose.Services["mosquitto"]
	if !ok || mosq.Image != "eclipse-mosquitto:2" {
		t.Fatalf("mosquitto service: %+v", mosq)
	}
	if mosq.Healthcheck == nil || len(mosq.Healthcheck.Test) == 0 {
		t.Error("mosquitto has no health check: pilothouse cannot wait for it")
	}
	ph, ok := compose.Services["pilothouse"]
	if !ok || ph.Build != "." {
		t.Fatalf("pilothouse service: %+v", ph)
	}
	if len(ph.DependsOn) != 1 || ph.DependsOn["mosquitto"] != "service_healthy" {
		t.Errorf("pilothouse depends_on %v: want mosquitto, condition service_healthy", ph.DependsOn)
	}
	mount := func(svc, target string, vols []composeVolume) composeVolume {
		for _, v := range vols {
			if v.Target == target {
				return v
			}
		}
		t.Fatalf("%s mounts nothing at %s: %v", svc, target, vols)
		return composeVolume{}
	}
	// The config folder, not single files: Docker creates a missing file's
	// bind source as a directory (passwd, before the setup made it).
	conf := mount("mosquitto", "/mosquitto/config", mosq.Volumes)
	if conf.Source != "./deploy/mosquitto" || !conf.ReadOnly {
		t.Errorf("mosquitto's /mosquitto/config is %+v: want ./deploy/mosquitto, read-only", conf)
	}
	for _, v := range mosq.Volumes {
		if strings.HasPrefix(v.Target, "/mosquitto/config/") {
			t.Errorf("mosquitto mounts the single file %s: a missing one becomes a directory", v.Source)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot, conf.Source, "mosquitto.conf")); err != nil {
		t.Errorf("mounted mosquitto.conf: %v", err)
	}
	if src := mount("mosquitto", "/mosquitto/data", mosq.Volumes).Source; compose.Volumes[src] == nil && src != "mosquitto-data" {
		t.Errorf("mosquitto persistence volume %q is not declared", src)
	}
	if mount("pilothouse", "/data", ph.Volumes).Source != "pilothouse-data" {
		t.Error("pilothouse /data is not the pilothouse-data volume")
	}
	for name, svc := range compose.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(interpolateDefaults(p), "127.0.0.1:") {
				t.Errorf("%s publishes %q: by default beyond the host's loopback", name, p)
			}
		}
	}
	cfgPath := mount("pilothouse", ph.Environment["PILOTHOUSE_CONFIG"], ph.Volumes).Source
	if cfgPath != "./examples/pilothouse-mosquitto.yaml" {
		t.Errorf("pilothouse config comes from %s", cfgPath)
	}
	for _, k := range []string{"PILOTHOUSE_MQTT_PASSWORD", "PILOTHOUSE_OWNER_TOKEN"} {
		if !strings.HasPrefix(ph.Environment[k], "${"+k+":?") {
			t.Errorf("environment %s = %q: want a required ${%s:?...} from .env", k, ph.Environment[k], k)
		}
		t.Setenv(k, "from-env-0123456789-"+k)
	}
	// The CLI in the container (docker compose exec pilothouse /pilothouse
	// rules) reads the owner's token from PILOTHOUSE_TOKEN.
	if !strings.HasPrefix(ph.Environment["PILOTHOUSE_TOKEN"], "${PILOTHOUSE_OWNER_TOKEN:?") {
		t.Errorf("environment PILOTHOUSE_TOKEN = %q: want the owner's token", ph.Environment["PILOTHOUSE_TOKEN"])
	}
	c := defaultConfig()
	if err := loadConfigFile(filepath.Join(repoRoot, cfgPath), c); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "0.0.0.0:8080" || c.Broker != "tcp://mosquitto:1883" || c.MQTTPassword != "from-env-0123456789-PILOTHOUSE_MQTT_PASSWORD" ||
		c.DataDir != "/data" || len(c.Principals) == 0 || !c.Principals[0].Matches("from-env-0123456789-PILOTHOUSE_OWNER_TOKEN") {
		t.Fatalf("compose config: %+v", c)
	}
	if err := c.check(true); err != nil {
		t.Fatalf("compose config does not pass the startup checks: %v", err)
	}
	// Without principals the same listener must be refused.
	c.Principals = nil
	if err := c.check(true); err == nil {
		t.Fatal("0.0.0.0:8080 without a token was accepted")
	}
}

// TestDockerSecretsIgnored: the Docker quick start's secrets (README) stay
// out of git and out of the image's build context.
func TestDockerSecretsIgnored(t *testing.T) {
	for file, want := range map[string][]string{
		".gitignore":    {"/.env", "/deploy/mosquitto/passwd"},
		".dockerignore": {".env", "deploy/mosquitto/passwd"},
	} {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range want {
			if !strings.Contains("\n"+string(b)+"\n", "\n"+line+"\n") {
				t.Errorf("%s lacks the line %q", file, line)
			}
		}
	}
}

// TestMosquittoConf keeps the keys CI's .ci/run rewrites and relies on.
func TestMosquittoConf(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"listener 1883", "allow_anonymous false", "password_file /mosquitto/config/passwd",
		"persistence true", "persistence_location /mosquitto/data/"} {
		if !strings.Contains("\n"+string(b)+"\n", "\n"+line+"\n") {
			t.Errorf("mosquitto.conf lacks the line %q", line)
		}
	}
}

// TestDockerfile checks the image's promises: non-root, /data, a
// shell-free health check that the binary implements.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"FROM golang:1.26 AS build", `CGO_ENABLED=0 go build -trimpath -ldflags="-s -w"`,
		"USER 65532:65532", `VOLUME ["/data"]`, `HEALTHCHECK `, `CMD ["/pilothouse", "healthcheck"]`,
		"COPY examples/pilothouse-mosquitto.yaml /etc/pilothouse/pilothouse.yaml"} {
		if !strings.Contains(s, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	if err := runHealthcheck(context.Background(), []string{"--url", a.URL() + "/healthz"}); err != nil {
		t.Fatalf("healthy server: %v", err)
	}
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"mqtt disconnected"}`, http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	err := runHealthcheck(context.Background(), []string{"--url", sick.URL})
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: {\"status\":\"mqtt disconnected\"}") {
		t.Fatalf("an unhealthy server: %v", err)
	}
	if err := runHealthcheck(context.Background(), []string{"--url", "http://127.0.0.1:1/healthz"}); err == nil {
		t.Fatal("a closed port passed the health check")
	}
}
