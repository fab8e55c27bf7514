import ArgumentParser
import ChunkMigrate
import Foundation
import MigrationJournal

struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Infer a plan from the source store and the (empty) destination store.",
        discussion: """
            Between Core Data stores, from the models the stores carry (their model caches), the \
            way lightweight migration infers a mapping model: entities and properties by \
            identifier (renaming identifier, else name), each store's columns as Core Data names them for its model, values \
            moved between columns, defaults for rows that did not have an attribute, entity \
            numbers and join tables remapped, keys preserved. A change lightweight migration cannot \
            infer is refused, naming the entity and property. Between plain SQLite stores: tables \
            and columns by name, relationships from declared foreign keys. Prints what it decided \
            and what it could not on stderr, and writes an ordinary plan that you can edit.

            With --models (the app's .xcdatamodeld or .momd, every version), the stores' versions \
            are found by their entity version hashes, as Core Data finds them (or by their \
            schemas where the hashes tell none they fit), and the plan covers the whole path \
            between them in one job, as Core Data's automatic migration does: one mapping \
            inferred from the source's version straight to the destination's, and where it \
            leaves an entity or property new, the versions between followed for renames on the \
            way. Custom steps (--step) cut the path. --models again for each bundle an app merges \
            into one model at run time. Where the names of the versions do not tell their order \
            and the renames on the way need it, --version-order gives it.

            A store without a model cache takes the other store's model (or one given) where \
            their entity version hashes are equal; where neither carries one, two stores of the \
            same hashes (or, without hashes, the same schema) are copied table for table.
            """)

    @Option(name: .long, help: "The source store (opened read-only).")
    var source: String

    @Option(name: .long, help: "The destination store: for Core Data, the empty store Core Data created with the new model.")
    var destination: String

    @Option(name: .long, help: "Where to write the plan (JSON); stdout when omitted.")
    var out: String?

    @Option(
        name: .long, parsing: .singleValue,
        help: "An entity renamed between the models that the new model does not record (no renaming identifier), as NEW=OLD (repeatable).")
    var rename: [String] = []

    @Option(
        name: .long,
        help:
            "The source store's model, for a store without a model cache (written before iOS 10): its .xcdatamodel folder, contents XML, or compiled .mom."
    )
    var modelFrom: String?

    @Option(
        name: .long,
        help: "The destination store's model, for a store without a model cache: its .xcdatamodel folder, contents XML, or compiled .mom.")
    var modelTo: String?

    @Option(
        name: .long, parsing: .singleValue,
        help:
            "Every version of the app's model: its .xcdatamodeld folder or compiled .momd. The plan goes from the source store's version to the destination's through every version between. Repeatable: bundles merged into one model at run time."
    )
    var models: [String] = []

    @Option(
        name: .long, parsing: .singleValue,
        help:
            "With --models: the order of a bundle's versions, oldest first, comma-separated (\"Model,Model 2,Model 3\"), where their names do not tell it (repeatable, one per bundle)."
    )
    var versionOrder: [String] = []

    @Option(
        name: .long, parsing: .singleValue,
        help:
            "With --models: a custom step between two versions, a JSON file {\"from\": VERSION, \"to\": VERSION, \"entities\": [...]} whose entity mappings fill what the step cannot infer (repeatable); composed with the inferred steps into one plan."
    )
    var step: [String] = []

    @Option(
        name: .long, parsing: .singleValue,
        help:
            "With --models: the app's mapping models, an .xcmappingmodel, a compiled .cdm, or a folder holding them (repeatable), besides those beside the bundle; each one on the path is used for its versions in place of inference, as Core Data uses it."
    )
    var mapping: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --models: how the path goes through the app's mapping models. farthest: from each version, the mapping model that goes farthest, inference straight across between them. step-by-step: one version to the next, each through the app's mapping model between the two where there is one, else inferred, as an app's progressive migrator runs it.",
            valueName: "farthest|step-by-step"))
    var path: VersionPath = .farthest

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --models: write into this folder a step to edit for each of the app's mapping models with custom policies that no --step replaces, its entity mappings filled in as far as the mapping model tells them and the policy's part marked TODO.",
            valueName: "folder"))
    var stepTemplate: String?

    @Option(name: .long, help: "With --models: the source store's version by name, where its metadata and model cache do not tell it.")
    var fromVersion: String?

    @Option(name: .long, help: "With --models: the destination store's version by name.")
    var toVersion: String?

    @Option(name: .long, help: "preserve: object IDs saved as URIs stay valid; allocate: keys after each table's largest.")
    var keys: KeysArgument = .preserve

    @Flag(
        name: .long,
        help:
            "Do not check the source for what it already is that the job will carry as it is (a required value left NULL, a join row to a deleted row, a missing external file)."
    )
    var noCheck = false

    @Flag(
        name: .long,
        help:
            "Where the new model adds a uniqueness constraint that source rows violate, keep the first row of each value (in key order) and leave the rest out, instead of failing the batch."
    )
    var keepFirstDuplicate = false

    func validate() throws {
        for pair in rename where pair.split(separator: "=").count != 2 {
            throw ValidationError("--rename takes NEW=OLD, not \(pair)")
        }
        if !models.isEmpty, modelFrom != nil || modelTo != nil {
            throw ValidationError("--models gives every version; --model-from and --model-to give one each: use one or the other")
        }
        if models.isEmpty,
            fromVersion != nil || toVersion != nil || !step.isEmpty || !versionOrder.isEmpty || !mapping.isEmpty || stepTemplate != nil
                || path != .farthest
        {
            throw ValidationError(
                "--from-version, --to-version, --version-order, --step, --mapping, --path and --step-template name versions of --models")
        }
    }

    func run() throws {
        let renames = Dictionary(
            rename.map { pair in
                let parts = pair.split(separator: "=").map(String.init)
                return (parts[0], parts[1])
            }, uniquingKeysWith: { _, last in last })
        do {
            var options = InferenceOptions(
                renames: renames,
                sourceModel: try modelFrom.map { try CoreDataModel.read(contentsOf: URL(fileURLWithPath: $0)) },
                destinationModel: try modelTo.map { try CoreDataModel.read(contentsOf: URL(fileURLWithPath: $0)) },
                keys: keys.policy, keepFirstDuplicate: keepFirstDuplicate,
                modelBundle: models.isEmpty
                    ? nil
                    : try CoreDataModelBundle.read(
                        contentsOf: models.map { URL(fileURLWithPath: $0) },
                        orders: versionOrder.map { $0.split(separator: ",").map(String.init) }
                    )
                    .adding(mappingModels: mapping.map { URL(fileURLWithPath: $0) }),
                sourceVersion: fromVersion, destinationVersion: toVersion)
            options.versionPath = path
            options.steps = try step.map { file in
                let data = try MigrationError.contents(of: file, what: "the step", code: .invalidPlan)
                return try CoreDataStep.decode(json: data, file: file)
            }
            if let stepTemplate, let bundle = options.modelBundle {
                for (file, model) in try CoreDataStep.writeTemplates(
                    for: bundle, except: options.steps, into: URL(fileURLWithPath: stepTemplate))
                {
                    FileHandle.standardError.write(
                        Data(
                            "template: wrote \(file.path) for \(model.url.lastPathComponent) (\(model.source) -> \(model.destination)): \(model.policies.joined(separator: ", ")); edit what it marks TODO, then give it with --step\n"
                                .utf8))
                }
            }
            let inferred = try MigrationPlan.infer(
                source: URL(fileURLWithPath: source),
                destination: URL(fileURLWithPath: destination), options: options)
            var report = inferred.decisions.map { "decided: \($0)" }
            report += inferred.notes.map { "note: \($0)" }
            // What the source already is that Core Data relies on elsewhere (a required value
            // left NULL, a join row to a row deleted since, a file gone): Core Data migrates it as
            // it is, and so does the job, whose check then carries it.
            if inferred.plan.coreData != nil, !noCheck,
                let check = try? CoreDataStoreCheck.run(store: URL(fileURLWithPath: source), model: options.sourceModel)
            {
                report += check.violations.map { "carried: \($0): as it is, as Core Data's migration carries it" }
            }
            // The disk the job will need, as `run` works it out before it starts.
            let space = try SpaceEstimate.of(
                plan: inferred.plan, source: URL(fileURLWithPath: source), destination: URL(fileURLWithPath: destination))
            report.append("space: the job \(space)\(space.fits ? "" : ": not enough, run refuses to start")")
            FileHandle.standardError.write(Data((report.joined(separator: "\n") + "\n").utf8))
            let json = try inferred.plan.encodedJSON()
            if let out {
                do { try json.write(to: URL(fileURLWithPath: out)) } catch {
                    throw MigrationError(.store, "cannot write the plan: \(error.localizedDescription)", file: out, cause: error)
                }
                FileHandle.standardError.write(Data("wrote \(out): \(inferred.plan.entities.count.counted("entity", "entities"))\n".utf8))
            } else {
                print(String(decoding: json, as: UTF8.self))
            }
        } catch let error as MigrationError {
            Output.fail(error)
        }
    }
}

/// A key policy as the command line takes it, by the name a plan spells it (`--keys preserve`),
/// which is also how its help names it and its default: an enumeration of numbers, as the policy
/// is in a journal, would be listed by its numbers.
enum KeysArgument: String, CaseIterable, ExpressibleByArgument {
    case allocate, preserve

    var policy: EntityMapping.KeyPolicy {
        switch self {
        case .allocate: .allocate
        case .preserve: .preserve
        }
    }
}

extension VersionPath: ExpressibleByArgument {}
