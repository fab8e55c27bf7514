public enum ChunkMigrateVersion { public static let string = "0.1.0" }
