/// The library's version.
public enum ChunkMigrateVersion {
    /// The version, as `chunkmigrate --version` prints it.
    public static let string = "0.1.0"
}
