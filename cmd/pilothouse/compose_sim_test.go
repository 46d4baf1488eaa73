package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDockerComposeSimProfile: the compose file's sim profile runs the
// demo devices against the stack's Mosquitto without Zigbee2MQTT, and only
// when asked for; its command parses with the real flags as the container
// gives them (no configuration file, the password from .env).
func TestDockerComposeSimProfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Profiles    []string          `yaml:"profiles"`
			Build       string            `yaml:"build"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			DependsOn   composeDependsOn  `yaml:"depends_on"`
			Healthcheck struct {
				Disable bool `yaml:"disable"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	sim, ok := compose.Services["sim"]
	if !ok || strings.Join(sim.Profiles, ",") != "sim" || sim.Build != "." {
		t.Fatalf("sim service: %+v: want profile sim, built from the repository", sim)
	}
	if sim.DependsOn["mosquitto"] != "service_healthy" || !sim.Healthcheck.Disable {
		t.Errorf("sim waits for %v, health check disabled %v: want mosquitto healthy, and no serve health check", sim.DependsOn, sim.Healthcheck.Disable)
	}
	if len(sim.Command) == 0 || sim.Command[0] != "sim" {
		t.Fatalf("sim command %v", sim.Command)
	}
	for k, v := range sim.Environment {
		if strings.HasPrefix(v, "${") {
			v = "from-env"
		}
		t.Setenv(k, v)
	}
	cfg, err := parseFlags("sim", sim.Command[1:])
	if err != nil {
		t.Fatalf("sim's command does not parse: %v", err)
	}
	if cfg.Broker != "tcp://mosquitto:1883" || cfg.MQTTUser != "pilothouse" || cfg.MQTTPassword != "from-env" || cfg.ConfigFile != "" {
		t.Errorf("sim connects to %s as %s (password %q, config %q)", cfg.Broker, cfg.MQTTUser, cfg.MQTTPassword, cfg.ConfigFile)
	}
}
