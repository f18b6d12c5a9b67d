package term

import "strings"

// Suggest returns the candidate closest to s when it is close enough to be a likely typo
// (at most a third of the letters differ), else "".
func Suggest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := distance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, (len([]rune(s))+2)/3)
	if bestD < 0 || bestD > limit {
		// A prefix or an unambiguous part still points at one name ("persist" → "persistent").
		var hits []string
		for _, c := range candidates {
			if len(s) >= 3 && strings.Contains(strings.ToLower(c), strings.ToLower(s)) {
				hits = append(hits, c)
			}
		}
		if len(hits) == 1 {
			return hits[0]
		}
		return ""
	}
	return best
}

// distance is the Levenshtein edit distance, with a swap of two neighbours counted as one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
