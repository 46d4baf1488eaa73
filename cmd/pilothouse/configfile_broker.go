package main

import (
	"errors"
	"fmt"
	"net"

	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/mqtt"
)

// brokerUsers replaces the embedded broker's users (mqtt.embedded_users).
// Each has exactly one of password_hash (mosquitto_passwd's $7$ format),
// password_env and password (plaintext: accepted with a warning), and
// optional read/write topic filters (absent: every topic; [] none).
func (l *cfgLoader) brokerUsers(n *yaml.Node, key string) error {
	return decodeList(l, n, key, &l.c.BrokerUsers, itemList[mqtt.BrokerUser]{what: "users", idKey: "username", noun: "broker user",
		required: true, item: l.brokerUser})
}

func (l *cfgLoader) brokerUser() listItem[mqtt.BrokerUser] {
	var u mqtt.BrokerUser
	var plain string
	var sources oneOf
	keys := map[string]handler{
		"username":      l.checked(&u.Name, nonEmpty),
		"password_hash": sources.of(l.checked(&u.PasswordHash, mqtt.CheckPasswordHash)),
		"password_env":  sources.of(l.fromEnv(&u.Password)),
		"password":      sources.of(l.checked(&plain, nonEmpty)),
		"read":          l.strList(&u.Read, mqtt.CheckFilter),
		"write":         l.strList(&u.Write, mqtt.CheckFilter),
	}
	return listItem[mqtt.BrokerUser]{keys: keys, id: &u.Name, done: func(it *yaml.Node, k string) (mqtt.BrokerUser, error) {
		if sources != 1 {
			return u, l.errAt(it, k, "set exactly one of password_hash, password_env and password")
		}
		if plain != "" {
			u.Password = plain
			if l.warn != nil {
				fmt.Fprintf(l.warn, "config %s:%d:%d: warning: %s.password is a plaintext secret; prefer password_hash (mosquitto_passwd) or password_env\n",
					l.file, it.Line, it.Column, k)
			}
		}
		return u, nil
	}}
}

// maxMQTTPacket is the largest packet MQTT can encode (a 4-byte remaining
// length plus the fixed header).
const maxMQTTPacket = 268435455 + 5

// checkBrokerListen refuses an embedded broker beyond loopback without
// broker users (the broker itself refuses too, after resolving the address).
func (c *Config) checkBrokerListen() error {
	if c.Broker != "" || len(c.BrokerUsers) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(c.BrokerListen)
	if err != nil {
		return fmt.Errorf("broker-listen %q: %w", c.BrokerListen, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return errors.New("refusing to run the embedded MQTT broker on " + c.BrokerListen +
		" without authentication: anyone who can reach it could publish device states (and so fire rules) and read every device. " +
		"Configure broker users (mqtt.embedded_users in the configuration file, see docs/configuration.md), " +
		"keep --broker-listen on loopback (127.0.0.1:1883), or use an external broker (--broker)")
}
