package main

import (
	"context"
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

// TestDockerCompose checks what can be checked without a Docker engine:
// the file parses, names its services, mounts files that exist, and the
// Pilothouse configuration it mounts loads and passes the startup checks.
func TestDockerCompose(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       string            `yaml:"build"`
			DependsOn   []string          `yaml:"depends_on"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	mosq, ok := compose.Services["mosquitto"]
	if !ok || mosq.Image != "eclipse-mosquitto:2" {
		t.Fatalf("mosquitto service: %+v", mosq)
	}
	ph, ok := compose.Services["pilothouse"]
	if !ok || ph.Build != "." || len(ph.DependsOn) != 1 || ph.DependsOn[0] != "mosquitto" {
		t.Fatalf("pilothouse service: %+v", ph)
	}
	mount := func(svc, target string, vols []string) string {
		for _, v := range vols {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == target {
				return parts[0]
			}
		}
		t.Fatalf("%s mounts nothing at %s: %v", svc, target, vols)
		return ""
	}
	conf := mount("mosquitto", "/mosquitto/config/mosquitto.conf", mosq.Volumes)
	if conf != "./deploy/mosquitto/mosquitto.conf" {
		t.Errorf("mosquitto.conf comes from %s", conf)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, conf)); err != nil {
		t.Errorf("mounted mosquitto.conf: %v", err)
	}
	if src := mount("mosquitto", "/mosquitto/data", mosq.Volumes); compose.Volumes[src] == nil && src != "mosquitto-data" {
		t.Errorf("mosquitto persistence volume %q is not declared", src)
	}
	if mount("pilothouse", "/data", ph.Volumes) != "pilothouse-data" {
		t.Error("pilothouse /data is not the pilothouse-data volume")
	}
	cfgPath := mount("pilothouse", ph.Environment["PILOTHOUSE_CONFIG"], ph.Volumes)
	if cfgPath != "./examples/pilothouse-mosquitto.yaml" {
		t.Errorf("pilothouse config comes from %s", cfgPath)
	}
	for _, k := range []string{"PILOTHOUSE_MQTT_PASSWORD", "PILOTHOUSE_OWNER_TOKEN"} {
		if !strings.HasPrefix(ph.Environment[k], "${"+k+":?") {
			t.Errorf("environment %s = %q: want a required ${%s:?...} from .env", k, ph.Environment[k], k)
		}
		t.Setenv(k, "from-env-"+k)
	}
	c := defaultConfig()
	if err := loadConfigFile(filepath.Join(repoRoot, cfgPath), c); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "0.0.0.0:8080" || c.Broker != "tcp://mosquitto:1883" || c.MQTTPassword != "from-env-PILOTHOUSE_MQTT_PASSWORD" ||
		c.DataDir != "/data" || len(c.Principals) == 0 || !c.Principals[0].Matches("from-env-PILOTHOUSE_OWNER_TOKEN") {
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
