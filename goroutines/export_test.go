package goroutines

// TakenByIdle hands task to an idle goroutine of p, if one waits now.
func TakenByIdle(p *Pool, task func()) bool {
	select {
	case p.tasks <- task:
		return true
	default:
		return false
	}
}
