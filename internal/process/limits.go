package process

// Kill reasons of the limits.
const (
	ReasonOutOfMemory = "out_of_memory"
	ReasonPidsLimit   = "pids_limit"
)

// How commands are bounded (LimitsState.Mechanism).
const (
	LimitsCgroup     = "cgroup"
	LimitsSupervisor = "supervisor"
)

// Limits bounds one command's tree.
type Limits struct {
	PidsMax   int
	MemoryMax int64
}

// LimitsState says how commands are bounded here.
type LimitsState struct {
	Mechanism string
}

// Limits returns how commands are bounded.
func (m *Manager) Limits() LimitsState { return LimitsState{Mechanism: LimitsSupervisor} }
