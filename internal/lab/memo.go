package lab

// Memo keeps a case's answers by key, each found once: a query that the timed runs should not
// repeat (an occupancy calculator's, say). The zero value is ready to use.
type Memo[K comparable, V any] struct{ m map[K]V }

// Get returns key's answer, from find on first use; an error is returned, not kept.
func (m *Memo[K, V]) Get(key K, find func() (V, error)) (V, error) {
	if v, ok := m.m[key]; ok {
		return v, nil
	}
	v, err := find()
	if err == nil {
		if m.m == nil {
			m.m = map[K]V{}
		}
		m.m[key] = v
	}
	return v, err
}
