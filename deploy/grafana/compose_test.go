package grafana

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestComposeMonitoring checks that docker-compose.yml wires the monitoring the way this
// package's files expect (no Docker here to run it): the worker serves metrics on the port
// Prometheus scrapes, by the service name Prometheus resolves; Prometheus gets
// deploy/prometheus/prometheus.yml; Grafana gets the provisioning and the dashboard where the
// provisioning files point, and its datasource's URL is the Prometheus service's port.
func TestComposeMonitoring(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	readYAML(t, "../../docker-compose.yml", &compose)
	worker, prom, graf := compose.Services["worker"], compose.Services["prometheus"], compose.Services["grafana"]
	if prom.Image == "" || graf.Image == "" {
		t.Fatalf("docker-compose.yml has no prometheus or grafana service")
	}

	var promCfg struct {
		ScrapeConfigs []struct {
			DNSSD []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, PrometheusConfig, &promCfg)
	if len(promCfg.ScrapeConfigs) != 1 || len(promCfg.ScrapeConfigs[0].DNSSD) != 1 {
		t.Fatalf("%s: want one scrape job with one DNS discovery, got %+v", PrometheusConfig, promCfg)
	}
	sd := promCfg.ScrapeConfigs[0].DNSSD[0]
	_, port, err := net.SplitHostPort(worker.Environment["STOREOPT_METRICS_ADDRESS"])
	if err != nil || port != strconv.Itoa(sd.Port) {
		t.Errorf("worker serves metrics at %q, Prometheus scrapes port %d", worker.Environment["STOREOPT_METRICS_ADDRESS"], sd.Port)
	}
	if len(sd.Names) != 1 || sd.Names[0] != "worker" {
		t.Errorf("Prometheus resolves %v, want the worker service", sd.Names)
	}
	mounted := func(svc string, volumes []string, host, container string) {
		t.Helper()
		for _, v := range volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && filepath.Clean(parts[0]) == filepath.Clean(host) && parts[1] == container {
				if _, err := os.Stat(filepath.Join("../..", host)); err != nil {
					t.Errorf("%s mounts %s, which does not exist: %v", svc, host, err)
				}
				return
			}
		}
		t.Errorf("%s does not mount %s at %s (volumes %v)", svc, host, container, volumes)
	}
	mounted("prometheus", prom.Volumes, "./deploy/prometheus/prometheus.yml", "/etc/prometheus/prometheus.yml")
	if !strings.Contains(strings.Join(prom.Command, " "), "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("prometheus command %v does not load /etc/prometheus/prometheus.yml", prom.Command)
	}
	mounted("grafana", graf.Volumes, "./deploy/grafana/provisioning", "/etc/grafana/provisioning")

	var providers struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "provisioning/dashboards/storeopt.yml", &providers)
	if len(providers.Providers) != 1 {
		t.Fatalf("dashboard providers %+v, want one", providers)
	}
	mounted("grafana", graf.Volumes, "./deploy/grafana/"+filepath.Dir(File), providers.Providers[0].Options.Path)

	var datasources struct {
		Datasources []struct {
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, "provisioning/datasources/prometheus.yml", &datasources)
	if len(datasources.Datasources) != 1 || datasources.Datasources[0].Type != "prometheus" ||
		datasources.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("datasources %+v, want one prometheus at http://prometheus:9090 (the prometheus service)", datasources)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
