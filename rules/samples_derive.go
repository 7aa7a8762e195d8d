package rules

// DeriveSample matches a sample to its route and derives its intent, as
// CheckSamples does: route is nil when no route matches (err then says
// why, for a GraphQL request no route selects). Golden tests of rule
// packs print each sample's Intent.Material and Intent.Key.
func DeriveSample(set *Set, s *Sample, d *Deriver) (*Route, *Intent, error) {
	return deriveSample(set, s, d)
}
