package gpu

import "fmt"

// EnablePeers lets every device access every other one's memory (kernels then read and write
// peer buffers through plain pointers). It is idempotent: a pair already enabled stays enabled.
// It fails, naming the pair, when two devices have no peer path (no NVLink or PCIe peer-to-peer).
func EnablePeers(devs []Device) error {
	for i, a := range devs {
		for j, b := range devs {
			if i == j {
				continue
			}
			ok, err := a.CanAccessPeer(b)
			if err != nil {
				return fmt.Errorf("can device %d access device %d: %w", i, j, err)
			}
			if !ok {
				return fmt.Errorf("device %d cannot access device %d's memory (no NVLink or PCIe peer-to-peer path): the peer-memory kernels need it", i, j)
			}
			if err := a.EnablePeerAccess(b); err != nil {
				return fmt.Errorf("enabling peer access from device %d to %d: %w", i, j, err)
			}
		}
	}
	return nil
}
