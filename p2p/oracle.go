package p2p

import (
	"errors"
	"fmt"
	"sync"
)

// Oracle answers pairwise P2P questions for one machine and caches every
// verdict for the life of the process (the kernel never invalidates its own
// cache either). It is safe for concurrent use.
type Oracle struct {
	topo *Topology

	mu    sync.RWMutex
	cache map[pair]*Verdict
}

type pair struct{ provider, client Addr }

// NewOracle returns an oracle over topo.
func NewOracle(topo *Topology) *Oracle {
	return &Oracle{topo: topo, cache: make(map[pair]*Verdict)}
}

// Topology returns the topology the oracle reads.
func (o *Oracle) Topology() *Topology { return o.topo }

// Verdict returns the kernel's verdict for a DMA from client into
// provider's memory. The returned Verdict is shared: do not modify it.
// A warm lookup does not allocate.
func (o *Oracle) Verdict(provider, client Addr) (*Verdict, error) {
	k := pair{provider, client}
	o.mu.RLock()
	v, ok := o.cache[k]
	o.mu.RUnlock()
	if ok {
		return v, nil
	}
	return o.compute(k)
}

func (o *Oracle) compute(k pair) (*Verdict, error) {
	p, err := o.topo.Function(k.provider)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	c, err := o.topo.Function(k.client)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	v := o.topo.computeVerdict(p, c)
	o.mu.Lock()
	if old, ok := o.cache[k]; ok {
		v = old // another goroutine won; keep one answer per pair
	} else {
		o.cache[k] = v
	}
	o.mu.Unlock()
	return v, nil
}

// ErrNoClients is returned by DistanceMany for an empty client list.
var ErrNoClients = errors.New("no clients")

// DistanceMany is the kernel's pci_p2pdma_distance_many: the sum of the
// distances from provider to every client, or -1 when any client is
// NOT_SUPPORTED (or there are none). The verdicts are returned alongside.
func (o *Oracle) DistanceMany(provider Addr, clients []Addr) (int, []*Verdict, error) {
	if len(clients) == 0 {
		return -1, nil, ErrNoClients
	}
	total, refused := 0, false
	vs := make([]*Verdict, len(clients))
	for i, c := range clients {
		v, err := o.Verdict(provider, c)
		if err != nil {
			return -1, nil, err
		}
		vs[i] = v
		if !v.MapType.Supported() {
			refused = true
		}
		total += v.Distance
	}
	if refused {
		return -1, vs, nil
	}
	return total, vs, nil
}
