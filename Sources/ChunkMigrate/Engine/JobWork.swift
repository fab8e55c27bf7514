import Foundation

/// The work of a job on its thread, phase by phase, in seconds of this machine: what is done and
/// what is left, from which progress reports one fraction of the whole job and the time left.
///
/// Each phase's work is counted in its own units, which grow with what it does:
/// - the copy: source rows;
/// - the fix-up pass: the rows of each deferred relationship's entity;
/// - an index build: its table's rows `n` as `n log2 n / 20` (a sort: 1 per row at a million);
/// - a finishing step: its table's rows (triggers, none);
/// - the store check's end on the job's thread: the rows copied.
///
/// A unit's cost is what this run measures for its phase (seconds over the units it did), and
/// before the phase has run, the copy's cost times the phase's ratio to it on the Core Data
/// bench store (``priorRatio``). So the fraction is of time, and the time left honest as soon as
/// each phase has run a little.
struct JobWork {
    enum Phase: Int, CaseIterable {
        case copy, fixup, index, finishing, check

        /// Seconds per unit relative to the copy's, before a phase has run, as measured on the
        /// Core Data bench store (`Tools/progress-truth`, 1M items: 3M rows copied in 6 s, 13
        /// deferred indexes built in 5 s, the check's end on the job's thread 0.01 s, most of it
        /// done beside the index builds).
        var priorRatio: Double {
            switch self {
            case .copy: 1
            case .fixup: 0.5
            case .index: 0.5
            case .finishing: 0.8
            case .check: 0.02
            }
        }
    }

    /// Units in all and done, by phase, as the engine counts them.
    var total = [Double](repeating: 0, count: Phase.allCases.count)
    var done = [Double](repeating: 0, count: Phase.allCases.count)
    /// This run's measure: seconds and units done, by phase.
    private var seconds = [Double](repeating: 0, count: Phase.allCases.count)
    private var measured = [Double](repeating: 0, count: Phase.allCases.count)
    /// The largest fraction reported so far: the fraction never goes back.
    private var reported = 0.0

    /// The units of an index build over `rows` rows.
    static func indexUnits(rows: Double) -> Double {
        rows * log2(max(2, rows)) / 20
    }

    /// Measures `units` of `phase` done in `seconds`.
    mutating func did(_ units: Double, of phase: Phase, in seconds: Double) {
        self.seconds[phase.rawValue] += seconds
        measured[phase.rawValue] += units
    }

    subscript(total phase: Phase) -> Double {
        get { total[phase.rawValue] }
        set { total[phase.rawValue] = newValue }
    }

    subscript(done phase: Phase) -> Double {
        get { done[phase.rawValue] }
        set { done[phase.rawValue] = newValue }
    }

    /// Seconds per unit of `phase`: measured once the phase has done some, else its ratio to
    /// the copy's.
    func cost(_ phase: Phase) -> Double {
        let index = phase.rawValue
        if measured[index] > 0, seconds[index] > 0 { return seconds[index] / measured[index] }
        let copy =
            measured[Phase.copy.rawValue] > 0 && seconds[Phase.copy.rawValue] > 0
            ? seconds[Phase.copy.rawValue] / measured[Phase.copy.rawValue] : 1e-6
        return copy * phase.priorRatio
    }

    /// Seconds of work left.
    var secondsLeft: Double {
        Phase.allCases.reduce(0) { $0 + max(0, total[$1.rawValue] - done[$1.rawValue]) * cost($1) }
    }

    /// The fraction of the job done, from 0 to 1: never lower than the last one reported, and
    /// below 1 until `complete`.
    mutating func fraction(complete: Bool = false) -> Double {
        if complete {
            reported = 1
            return 1
        }
        var all = 0.0, finished = 0.0
        for phase in Phase.allCases {
            let cost = cost(phase)
            all += total[phase.rawValue] * cost
            finished += min(done[phase.rawValue], total[phase.rawValue]) * cost
        }
        let fraction = all > 0 ? min(0.999, finished / all) : 0
        reported = max(reported, fraction)
        return reported
    }
}
