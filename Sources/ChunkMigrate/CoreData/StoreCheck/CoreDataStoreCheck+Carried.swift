import Foundation

/// What the migration brought about, told from what the source already was.
///
/// Core Data migrates a store as it is: a required value left NULL, a join row to a row deleted
/// since, `Z_MAX` behind the keys, an R-tree index without its triggers, a value naming an
/// external file that is gone: its own migration carries them, and the app goes on. A check of
/// the migrated store finds them all the same. Each finding is looked up in the source, checked
/// the same way under its own model: where the source breaks the same invariant, on the same
/// entity and property (by the plan's names), in at least as many rows, and in the same rows
/// where the keys are kept, it is the source's, carried as it was, and no violation of the
/// migration. Only what the source did not have fails the job.
extension CoreDataStoreCheck.Report {
    /// How a finding of the migrated store is named in its source.
    public struct SourceNames: Sendable, Codable {
        /// Destination entity name -> the source entity its rows come from (the plan's
        /// ``CoreDataMapping/entities``); an entity not listed keeps its name.
        public var entities: [String: String]
        /// Destination `Entity.property` -> the names the property may have in the source (its
        /// renaming identifier); a property not listed keeps its name.
        public var properties: [String: [String]]
        /// The destination entities whose rows keep the source's keys.
        public var keysKept: Set<String>

        /// Creates the names.
        public init(entities: [String: String] = [:], properties: [String: [String]] = [:], keysKept: Set<String> = []) {
            self.entities = entities
            self.properties = properties
            self.keysKept = keysKept
        }

        /// The names of a plan's Core Data part: entities as the plan maps them, properties by
        /// the destination model's renaming identifiers, keys kept where the plan preserves them.
        init(plan: MigrationPlan, destination model: CoreDataModel?) {
            entities = plan.coreData?.entities ?? [:]
            var properties: [String: [String]] = [:]
            var keysKept: Set<String> = []
            for entity in model?.entities ?? [] {
                for property in entity.properties where property.renamingIdentifier != nil {
                    properties["\(entity.name).\(property.name)"] = [property.name, property.previousName]
                }
            }
            if let model, let layout = try? CoreDataLayout(model: model) {
                for entity in model.entities {
                    // Every entity mapping that writes the entity's table keeps the keys.
                    guard let table = layout.table(of: entity.name) else { continue }
                    let writers = plan.entities.filter { $0.destination.table.caseInsensitiveCompare(table.name) == .orderedSame }
                    if !writers.isEmpty, writers.allSatisfy({ $0.keys == .preserve }) { keysKept.insert(entity.name) }
                }
            }
            self.properties = properties
            self.keysKept = keysKept
        }
    }

    /// This report with each violation its source already had moved to ``carried``.
    ///
    /// - Parameters:
    ///   - source: the check of the source store, under its own model.
    ///   - names: how the findings of this store are named in the source.
    public func carryingOver(from source: Self, names: SourceNames) -> Self {
        carryingOver { finding in
            source.findings.first { Self.same(finding, $0, names: names) }.map { had in
                had.line == finding.line ? "as in the source" : "the source: \(had.line)"
            }
        }
    }

    /// This report with each finding that `source` tells the source already had moved to
    /// ``carried``, with what it says of it.
    func carryingOver(_ source: (CoreDataStoreCheck.Finding) -> String?) -> Self {
        var result = self
        result.violations = []
        result.findings = []
        let found = Set(findings.map(\.line))
        for line in violations where !found.contains(line) { result.violations.append(line) }
        for finding in findings {
            if let why = source(finding) {
                result.carried.append("\(finding.line) (\(why))")
            } else {
                result.add(finding)
            }
        }
        return result
    }

    /// Whether `finding` of the migrated store is `had` of the source, carried: the same
    /// invariant on the entity and property its rows came from, in at least as many rows, and in
    /// the same rows where the keys are the source's and both lists are whole.
    static func same(_ finding: CoreDataStoreCheck.Finding, _ had: CoreDataStoreCheck.Finding, names: SourceNames) -> Bool {
        guard finding.kind == had.kind, finding.count <= had.count else { return false }
        if let entity = finding.entity {
            guard let sourceEntity = had.entity, sourceEntity == (names.entities[entity] ?? entity) || sourceEntity == entity else {
                return false
            }
        } else if had.entity != nil {
            return false
        }
        if let property = finding.property {
            let candidates = finding.entity.flatMap { names.properties["\($0).\(property)"] } ?? [property]
            guard let sourceProperty = had.property, candidates.contains(sourceProperty) else { return false }
        } else if had.property != nil {
            return false
        }
        if let entity = finding.entity, names.keysKept.contains(entity), !finding.keys.isEmpty, !had.keys.isEmpty,
            finding.keys.count == Int(finding.count), had.keys.count == Int(had.count)
        {
            return Set(finding.keys).isSubset(of: had.keys)
        }
        return true
    }
}

extension CoreDataStoreCheck {
    /// The check of a migrated store, its violations the source already had carried
    /// (``Report/carryingOver(from:names:)``); the source is checked only where the migrated
    /// store breaks an invariant.
    ///
    /// - Parameters:
    ///   - report: the check of the migrated store.
    ///   - source: the source store, under `model` (its own model cache when `nil`).
    ///   - tables: only these tables of the source, when the report covers only them.
    static func separatingCarried(
        _ report: Report, source: URL, model: CoreDataModel? = nil, names: Report.SourceNames,
        tables: Set<String>? = nil
    ) -> Report {
        guard !report.findings.isEmpty else { return report }
        let sourceReport: Report
        do { sourceReport = try run(store: source, model: model, tables: tables) } catch {
            var report = report
            report.unchecked.append(
                "the source could not be checked for what it already had (\(error)): every finding is reported as a violation")
            return report
        }
        return report.carryingOver(from: sourceReport, names: names)
    }
}

extension CoreDataStoreCheck {
    /// Checks the store a plan migrated `source` into, carrying what the source already had
    /// (``Report/carryingOver(from:names:)``): what a job's own check reports, for a job
    /// completed earlier.
    ///
    /// - Throws: ``MigrationError`` naming the file when the migrated store cannot be read.
    public static func run(migrated store: URL, source: URL, plan: MigrationPlan, tables: Set<String>? = nil) throws -> Report {
        let report = try run(store: store, tables: tables)
        guard !report.findings.isEmpty else { return report }
        let names = Report.SourceNames(plan: plan, destination: (try? CoreDataModel.read(store: store)) ?? nil)
        return separatingCarried(report, source: source, names: names, tables: nil)
    }
}
