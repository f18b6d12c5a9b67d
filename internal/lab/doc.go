// Package lab is the course's run engine. A lab is a folder with a lab.yaml (manifest.go) and a
// Go driver that supplies only what differs between labs (contract.go): its problems on the
// device, the reference, one call per variant, the work counts. The engine does the rest the same
// way for every lab: it builds the kernels (build.go), plans variant × problem jobs (engine.go),
// runs them in worker processes that a crash or a hang cannot take down (supervise.go,
// worker.go), owns every case's buffers (case.go: allocates, poisons the outputs, hands them to
// the check, frees), checks and times each one, and records the results. Grading uses the same
// machinery: lab.yaml's grading section (grading.go) and a job hook (hook.go) through which the
// grader (internal/grade) runs its jobs; custom problems from the command line (custom.go) too.
package lab
