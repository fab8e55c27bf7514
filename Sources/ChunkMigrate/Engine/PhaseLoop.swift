/// The one loop every phase of a job runs in, on the copy path (copy, fix-up, index builds,
/// finishing steps) and in place: one unit of work at a time, each committed before the next,
/// and the run stops between units only.
///
/// The stop rule is here and nowhere else: a run stops when asked to, or once its deadline has
/// passed, but only after it has done at least one unit, so that a caller that runs with a short
/// budget again and again still gets to the end.
struct PhaseLoop {
    let started: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant?
    /// Whether the run was asked to stop (a pause, a cancelled task).
    let shouldStop: () -> Bool
    /// The units this run has done, in every phase.
    private(set) var units = 0
    /// Source rows this run has copied.
    var rows: Int64 = 0
    /// How long the last unit took.
    private(set) var lastUnit: Duration = .zero
    private let clock = ContinuousClock()

    init(deadline: ContinuousClock.Instant?, shouldStop: @escaping () -> Bool) {
        self.started = clock.now
        self.deadline = deadline
        self.shouldStop = shouldStop
    }

    /// Whether the run stops before its next unit.
    func stops() -> Bool {
        if shouldStop() { return true }
        if let deadline, units > 0, clock.now >= deadline { return true }
        return false
    }

    /// Runs `next` until it returns `nil`, the phase done (`.complete`), or the run stops first
    /// (`.paused`); `done` is called after each unit with what it returned, once its source rows
    /// (`rows`) are counted. `finished` tells, where the phase can, that no unit is left, so that a
    /// run that did the last unit completes the phase rather than stopping before it finds so.
    mutating func run<Unit>(
        until finished: () throws -> Bool = { false }, _ next: () throws -> Unit?,
        done: (Unit, PhaseLoop) throws -> Void = { _, _ in },
        rows: (Unit) -> Int64 = { _ in 0 }
    ) throws -> RunOutcome {
        while true {
            if try finished() { return .complete }
            if stops() { return .paused }
            let started = clock.now
            guard let unit = try next() else { return .complete }
            lastUnit = clock.now - started
            units += 1
            self.rows += rows(unit)
            try done(unit, self)
        }
    }
}
