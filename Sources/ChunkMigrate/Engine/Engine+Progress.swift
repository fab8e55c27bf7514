import Foundation
import Logging
import MigrationJournal

/// The progress reports: what each phase did, and the job's work done and left (``JobWork``).
extension Engine {
    /// The last entity in the job's order that writes `table`; the last entity where none does.
    func entity(writing table: String?) -> Int {
        table.flatMap { table in
            order.entities.last { plan.entities[$0].destination.table.caseInsensitiveCompare(table) == .orderedSame }
        } ?? order.entities.last ?? 0
    }

    /// The progress report after a unit of work of `entity` (for a step after the copy, the
    /// entity writing its table): its rows and the job's, the job's fraction, the run's pace, and
    /// the time left.
    func progress(
        _ run: PhaseLoop, entity: Int, phase: MigrationProgress.Phase, batch: UInt64,
        table: String? = nil
    ) -> MigrationProgress {
        let seconds = (clock.now - run.started) / .seconds(1)
        let rate = seconds > 0 ? Double(run.rows) / seconds : 0
        let done = states.reduce(0) { $0 + $1.rowsRead }
        let total = states.reduce(Int64(0)) { $0.addingReportingOverflow($1.estimatedTotal).overflow ? .max : $0 + $1.estimatedTotal }
        countWork()
        let table = table ?? (phase == .copy || phase.isFixup ? plan.entities[entity].destination.table : nil)
        return MigrationProgress(
            entity: plan.entities[entity].name, phase: phase, table: table, fraction: work.fraction(), batch: batch,
            rowsDone: states[entity].rowsRead, rowsTotal: states[entity].estimatedTotal,
            jobRowsDone: done, jobRowsTotal: total, rowsPerSecond: rate,
            estimatedRemaining: run.units > 0 ? .seconds(work.secondsLeft) : nil, batchSize: batchSize)
    }

    /// The rows of the entities that write `table`, as far as the copy knows them.
    func rows(ofTable table: String) -> Double {
        (writers[table.uppercased()] ?? []).reduce(0) { $0 + Double(states[$1].estimatedTotal) }
    }

    /// Counts the job's work in all and done, phase by phase (``JobWork``): the copy's rows,
    /// the fix-ups' by the segments done, the index builds (those of runs before done), the
    /// finishing steps this run has left and done, the check's end.
    func countWork() {
        work[total: .copy] = states.reduce(0) { $0 + Double($1.estimatedTotal) }
        work[done: .copy] = states.reduce(0) { $0 + Double($1.rowsRead) }
        var fixups = 0.0, fixed = 0.0
        for (entity, columns) in order.deferred {
            let rows = Double(states[entity].estimatedTotal)
            let segments = idMap.segments(entity: UInt32(entity)).count
            for column in columns {
                fixups += rows
                if states[entity].complete, segments > 0 {
                    fixed += rows * min(1, Double(states[entity].fixupBatch[column] ?? 0) / Double(segments))
                }
            }
        }
        work[total: .fixup] = fixups
        work[done: .fixup] = fixed
        // The builds of the runs before count as done, so that a resumed job's fraction goes on
        // from where they left it.
        var builds = 0.0, builtBefore = 0.0
        for build in indexBuilds {
            let units = JobWork.indexUnits(rows: rows(ofTable: build.table))
            builds += units
            if build.doneBefore { builtBefore += units }
        }
        work[total: .index] = builds
        work[done: .index] = builtBefore + indexUnitsDone
        let derived = (hooks?.finishingTables ?? []).reduce(0) { $0 + rows(ofTable: $1) }
        work[total: .finishing] = max(derived, finishingUnitsDone)
        work[done: .finishing] = finishingUnitsDone
        work[total: .check] = hooks?.checksStore == true ? work[total: .copy] : 0
    }
}
