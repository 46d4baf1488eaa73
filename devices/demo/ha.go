package demo

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// outdoor_weather is announced only through Home Assistant MQTT discovery,
// like an ESPHome or Tasmota device would be.
const (
	weatherName  = "outdoor_weather"
	weatherBase  = "pilothouse-demo/" + weatherName
	weatherState = weatherBase + "/state"
	weatherAvail = weatherBase + "/availability"
)

type weatherReading struct {
	Temperature float64 `json:"temperature"`
	Humidity    float64 `json:"humidity"`
}

// haSensor is one Home Assistant sensor discovery config.
type haSensor struct {
	Name              string   `json:"name"`
	UniqueID          string   `json:"unique_id"`
	StateTopic        string   `json:"state_topic"`
	ValueTemplate     string   `json:"value_template"`
	UnitOfMeasurement string   `json:"unit_of_measurement"`
	DeviceClass       string   `json:"device_class"`
	StateClass        string   `json:"state_class"`
	AvailabilityTopic string   `json:"availability_topic"`
	Device            haDevice `json:"device"`
	Origin            haOrigin `json:"origin"`
}

type haDevice struct {
	Identifiers  []string `json:"identifiers"`
	Name         string   `json:"name"`
	Manufacturer string   `json:"manufacturer"`
	Model        string   `json:"model"`
	Area         string   `json:"suggested_area,omitempty"`
}

type haOrigin struct {
	Name string `json:"name"`
}

func (s *Sim) weatherConfigs() map[string]haSensor {
	dev := haDevice{Identifiers: []string{"pilothouse_demo_" + weatherName}, Name: weatherName,
		Manufacturer: "Pilothouse", Model: "Simulated weather station", Area: "garden"}
	mk := func(key, name, unit, class string) haSensor {
		return haSensor{Name: name, UniqueID: "pilothouse_demo_" + weatherName + "_" + key,
			StateTopic: weatherState, ValueTemplate: "{{ value_json." + key + " }}",
			UnitOfMeasurement: unit, DeviceClass: class, StateClass: "measurement",
			AvailabilityTopic: weatherAvail, Device: dev, Origin: haOrigin{Name: "Pilothouse demo"}}
	}
	p := s.o.HAPrefix + "/sensor/" + weatherName + "/"
	return map[string]haSensor{
		p + "temperature/config": mk("temperature", "Temperature", "°C", "temperature"),
		p + "humidity/config":    mk("humidity", "Humidity", "%", "humidity"),
	}
}

// announceWeather publishes the discovery configs, availability and state.
// Caller holds s.opMu.
func (s *Sim) announceWeather(ctx context.Context) error {
	s.mu.Lock()
	gone, r := s.weatherGone, s.weather
	s.mu.Unlock()
	if gone {
		return nil
	}
	for topic, cfg := range s.weatherConfigs() {
		if err := s.publishJSON(ctx, topic, cfg, true); err != nil {
			return err
		}
	}
	if err := s.publish(ctx, weatherAvail, []byte("online"), true); err != nil {
		return err
	}
	return s.publishJSON(ctx, weatherState, r, true)
}

// changeWeather applies f to the reading and publishes it.
func (s *Sim) changeWeather(ctx context.Context, f func(r *weatherReading) error) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.lockWeather(); err != nil {
		return err
	}
	next := s.weather
	if err := f(&next); err != nil {
		s.mu.Unlock()
		return err
	}
	s.weather = next
	s.mu.Unlock()
	return s.publishJSON(ctx, weatherState, next, true)
}

func (s *Sim) triggerWeather(ctx context.Context, patch map[string]any) error {
	return s.changeWeather(ctx, func(r *weatherReading) error {
		for k, v := range patch {
			f, ok := v.(float64)
			if n, isInt := v.(int); isInt {
				f, ok = float64(n), true
			}
			if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
				return invalidf("demo: %s.%s: want a number, got %v", weatherName, k, v)
			}
			switch k {
			case "temperature":
				r.Temperature = f
			case "humidity":
				r.Humidity = f
			default:
				return invalidf("demo: %s has no property %q; its properties: humidity, temperature", weatherName, k)
			}
		}
		return nil
	})
}

// lockWeather takes s.mu while the weather station is there; an error
// (s.mu released) when it was removed.
func (s *Sim) lockWeather() error {
	s.mu.Lock()
	if s.weatherGone {
		s.mu.Unlock()
		return fmt.Errorf("demo: no device %q", weatherName)
	}
	return nil
}

// removeWeather clears the discovery configs (empty retained payloads, as
// Home Assistant expects) and the retained state.
func (s *Sim) removeWeather(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.lockWeather(); err != nil {
		return err
	}
	s.weatherGone = true
	s.mu.Unlock()
	var errs []error
	for topic := range s.weatherConfigs() {
		errs = append(errs, s.publish(ctx, topic, nil, true))
	}
	errs = append(errs, s.publish(ctx, weatherState, nil, true), s.publish(ctx, weatherAvail, nil, true))
	return errors.Join(errs...)
}
