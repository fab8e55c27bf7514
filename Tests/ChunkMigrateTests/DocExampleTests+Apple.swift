// swift-format-ignore-file
// (The examples here are the docs' code blocks word for word: DocExampleDriftTests.)
import ChunkMigrate
import Foundation
import Logging
#if canImport(BackgroundTasks) && !os(macOS)
import BackgroundTasks
#endif
#if canImport(CoreData)
import CoreData
#endif

// The examples of the README and the DocC articles that use Apple's frameworks, word for word
// (`DocExampleDriftTests` checks that they are the documents'). They are compiled with the tests, in Swift 6 mode: against the
// frameworks where they are available, otherwise against the stand-ins at the end of this file,
// which declare what Swift imports from the frameworks' headers (BackgroundTasks' classes are
// unavailable on macOS). They are not run: they need an app.

private func journalExcludedFromBackup() throws -> (journalURL: URL, newStoreURL: URL) {
    // GettingStarted.md, where the journal lives
    let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
                                              appropriateFor: nil, create: true)
    var journalURL = support.appendingPathComponent("Migration.journal", isDirectory: true)
    let newStoreURL = support.appendingPathComponent("Model-v2.sqlite")
    // end
    // GettingStarted.md, excluded from backup
    var values = URLResourceValues()
    values.isExcludedFromBackup = true
    try journalURL.setResourceValues(values)
    // end
    return (journalURL, newStoreURL)
}

// GettingStarted.md, a background processing task
nonisolated func registerMigrationTask(journalURL: URL, logger: Logger) {
    BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.migrate", using: nil) { task in
        nonisolated(unsafe) let task = task
        let job: MigrationJob
        do {
            job = try MigrationJob.resume(at: journalURL, logger: logger)
        } catch {
            task.setTaskCompleted(success: false)           // the error names what to fix; the job stays resumable
            return
        }
        task.expirationHandler = { job.pause() }            // the job stops at the next batch boundary
        Task {
            let outcome = try? await job.run()              // to the end, unless paused; a failure is logged
            if outcome == .paused { try? scheduleMigrationTask() }   // the rest in a later window
            task.setTaskCompleted(success: outcome == .complete)
        }
    }
}

nonisolated func scheduleMigrationTask() throws {
    let request = BGProcessingTaskRequest(identifier: "com.example.migrate")
    request.requiresExternalPower = true                    // long and CPU-heavy: while the device charges
    try BGTaskScheduler.shared.submit(request)
}
// end

private func replaceStore(coordinator: NSPersistentStoreCoordinator, storeURL: URL, newStoreURL: URL, journalURL: URL) throws {
    // README, GettingStarted.md, when the job completes
    try coordinator.replacePersistentStore(at: storeURL, withPersistentStoreFrom: newStoreURL, type: .sqlite)
    try coordinator.destroyPersistentStore(at: newStoreURL, type: .sqlite)
    try FileManager.default.removeItem(at: journalURL)
    // end
}

#if !canImport(BackgroundTasks) || os(macOS)
// What Swift imports from BackgroundTasks' BGTask.h, BGTaskRequest.h and BGTaskScheduler.h (iOS 26
// SDK; the framework is unavailable on macOS): BGTask is not Sendable, and neither the launch
// handler nor the expiration handler is a Sendable closure.
// <https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/register(fortaskwithidentifier:using:launchhandler:)>
class BGTask {
    var identifier: String { fatalError("a stand-in, compiled and never run") }
    var expirationHandler: (() -> Void)?
    func setTaskCompleted(success: Bool) { fatalError("a stand-in, compiled and never run") }
}

class BGTaskRequest {
    var earliestBeginDate: Date?
}

class BGProcessingTaskRequest: BGTaskRequest {
    var requiresNetworkConnectivity = false
    var requiresExternalPower = false
    init(identifier: String) { fatalError("a stand-in, compiled and never run") }
}

class BGTaskScheduler {
    class var shared: BGTaskScheduler { fatalError("a stand-in, compiled and never run") }
    @discardableResult
    func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?,
                  launchHandler: @escaping (BGTask) -> Void) -> Bool { fatalError("a stand-in, compiled and never run") }
    func submit(_ taskRequest: BGTaskRequest) throws { fatalError("a stand-in, compiled and never run") }
}
#endif

#if !canImport(CoreData)
// Core Data's declarations, as Apple documents them (iOS 15 and later):
// <https://developer.apple.com/documentation/coredata/nspersistentstorecoordinator/replacepersistentstore(at:destinationoptions:withpersistentstorefrom:sourceoptions:type:)>
// <https://developer.apple.com/documentation/coredata/nspersistentstorecoordinator/destroypersistentstore(at:type:options:)>
class NSPersistentStore {
    struct StoreType: Sendable {
        static var sqlite: StoreType { fatalError("a stand-in, compiled and never run") }
    }
}

class NSPersistentStoreCoordinator {
    func replacePersistentStore(at destinationURL: URL, destinationOptions: [AnyHashable: Any]? = nil,
                                withPersistentStoreFrom sourceURL: URL, sourceOptions: [AnyHashable: Any]? = nil,
                                type sourceType: NSPersistentStore.StoreType) throws {
        fatalError("a stand-in, compiled and never run")
    }

    func destroyPersistentStore(at url: URL, type storeType: NSPersistentStore.StoreType,
                                options: [AnyHashable: Any]? = nil) throws {
        fatalError("a stand-in, compiled and never run")
    }
}
#endif
