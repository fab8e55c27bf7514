import Foundation

extension CoreDataModelMapping {
    /// Why Core Data's lightweight migration rebuilds the table of the entity tree whose
    /// destination root is `root` (copies its rows into a table made anew) rather than altering
    /// it in place; `nil` where it alters it in place. Over several versions the mapping is one
    /// step from the store's version straight to the target, as Core Data's automatic migration
    /// takes it, and so is the rule.
    ///
    /// What it changes for the rows: in place, an attribute added with a default is written into
    /// every row of the table (`ALTER TABLE ... ADD COLUMN`, then `UPDATE <table> SET <column> =
    /// <default>` with no condition on `Z_ENT`), the rows of sibling entities too, and a column's
    /// values stay in rows of entities without the property; rebuilt, each row takes only the
    /// values of its own entity's properties, NULL in the other columns.
    ///
    /// The rule is Core Data's in-place migrator's (`_NSSQLTableMigrationDescription
    /// -_determineSchemaTransformationComplexityInMigrationContext:`, with
    /// `-_doAttributesHaveChangesRequiringCopyForMigration:withContext:` and
    /// `-_doRelationshipsHaveChangesRequiringCopyForMigration:inContext:`). A table is rebuilt
    /// where:
    /// - its root entity's table gets another name, and the two roots' renaming identifiers
    ///   differ (an entity that was a sub-entity becomes the root, or a rename no renaming
    ///   identifier records);
    /// - an entity of the source tree that goes declares attributes or to-ones of its own, or
    ///   the rows of one go to another table;
    /// - an entity that stays loses an attribute or to-one it declared (removed, made
    ///   transient, moved down to its sub-entities);
    /// - an attribute changes type or external storage;
    /// - a to-one becomes required, or a relationship changes between to-one and to-many, or a
    ///   to-one loses its entity or order column (its target's sub-entities go, its inverse is
    ///   no longer ordered).
    ///
    /// Anything else keeps it in place: attributes and relationships added, with or without
    /// defaults; properties and sub-entities renamed; new entities; removed entities without
    /// properties of their own; entities renumbered (`Z_ENT` rewritten, `Z<n>_` columns renamed).
    ///
    /// With the app's mapping model, Core Data's migration manager writes every row anew into a
    /// new store: every table is made anew.
    func tableRebuild(ofTreeOf root: String) -> String? {
        if let mappingModel {
            return
                "Core Data migrates with the app's mapping model \(mappingModel.url.lastPathComponent), which writes every row into a new store"
        }
        return rebuildInOneStep(root)
    }

    /// ``tableRebuild(ofTreeOf:)`` between the two versions of a mapping.
    private func rebuildInOneStep(_ root: String) -> String? {
        let tree = destination.descendants(of: root)
        guard tree.contains(where: { sourceEntity[$0] != nil }) else { return nil }
        guard let rootSource = sourceEntity[root] else { return "\(root), the root of its table, is new" }
        let sourceRoot = source.root(of: rootSource)
        if sourceRoot.uppercased() != root.uppercased() {
            func identifier(_ entity: CoreDataModel.Entity?) -> String? {
                entity.map { $0.renamingIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? $0.name }
            }
            if rootSource != sourceRoot { return "\(root), the root of its table, was a sub-entity of \(sourceRoot)" }
            if identifier(destination.entity(named: root)) != identifier(source.entity(named: sourceRoot)) {
                return "its root \(sourceRoot) becomes \(root) without a renaming identifier that says so"
            }
        }
        let destinationOf = Dictionary(sourceEntity.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        for old in source.descendants(of: sourceRoot) {
            guard let new = destinationOf[old] else {
                if let property = source.entity(named: old)?.properties.first(where: Self.hasColumn) {
                    return "entity \(old) goes with \(property.name), an attribute or to-one of its own"
                }
                continue
            }
            let table = destination.root(of: new)
            if table != root { return "the rows of \(old) go to the table of \(table)" }
        }
        for new in tree {
            guard let old = sourceEntity[new], let entity = destination.entity(named: new) else { continue }
            for property in entity.properties where !property.isTransient {
                guard let (_, was) = sourceProperty(property.name, of: new), let reason = change(from: was, to: property, of: new) else {
                    continue
                }
                return reason
            }
            // What the source entity declared and no property of its counterpart takes.
            let taken = Set(
                destination.allProperties(of: new).filter { !$0.property.isTransient }.compactMap { declared in
                    sourceProperty(declared.property.name, of: new).flatMap { $0.declaredBy == old ? $0.property.name : nil }
                })
            if let lost = source.entity(named: old)?.properties.first(where: { Self.hasColumn($0) && !taken.contains($0.name) }) {
                return "\(old).\(lost.name) goes"
            }
        }
        return nil
    }

    /// Why a property's change makes Core Data rebuild its table; `nil` for one it makes in place.
    private func change(from was: CoreDataModel.Property, to property: CoreDataModel.Property, of entity: String) -> String? {
        let path = "\(entity).\(property.name)"
        switch (was.kind, property.kind) {
        case let (.attribute(before), .attribute(after)):
            if before.type != after.type { return "\(path) changes type from \(before.type.xmlName) to \(after.type.xmlName)" }
            if before.allowsExternalStorage != after.allowsExternalStorage {
                return "\(path) \(after.allowsExternalStorage ? "now allows" : "no longer allows") external storage"
            }
            return nil
        case let (.relationship(before), .relationship(after)):
            if before.isToMany != after.isToMany { return "\(path) becomes \(after.isToMany ? "to-many" : "to-one")" }
            guard !after.isToMany else { return nil }
            if was.isOptional, !property.isOptional { return "the to-one \(path) becomes required" }
            if source.descendants(of: before.destination).count > 1, destination.descendants(of: after.destination).count == 1 {
                return "the to-one \(path) loses its entity column (\(after.destination) has no sub-entities any more)"
            }
            func ordered(_ model: CoreDataModel, _ relationship: CoreDataModel.Relationship) -> Bool {
                relationship.inverse.flatMap { model.property($0, of: relationship.destination)?.property.relationship?.isOrdered } ?? false
            }
            if ordered(source, before), !ordered(destination, after) {
                return "the to-one \(path) loses its order column (its inverse is no longer ordered)"
            }
            return nil
        default:
            return "\(path) changes between attribute and relationship"
        }
    }

    /// Whether a property has a column in its entity's table: a stored attribute or a to-one.
    private static func hasColumn(_ property: CoreDataModel.Property) -> Bool {
        !property.isTransient && (property.attribute != nil || property.relationship?.isToMany == false)
    }
}
