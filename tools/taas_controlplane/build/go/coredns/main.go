// Command coredns runs upstream CoreDNS with only the plugins the TaaS cluster's Corefile uses.
//
// CoreDNS's own main imports every plugin (and with them every cloud provider's SDK); a main
// of our own that imports a few plugins and lists them in the upstream order is CoreDNS's
// documented way to make a smaller build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins' order in a request's chain: upstream's order (core/dnsserver/zdirectives.go),
// keeping only the ones imported above.
var directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
