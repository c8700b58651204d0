public import Foundation
import ODataCore

/// An entity set of a service, for reading entities whose type is known only at run time (ErrorArchive's
/// `AffectedEntity`).
public protocol EntitySetProtocol: Sendable {
    /// The set's name (`Customers`).
    var name: String { get }
    /// The qualified name of the set's entity type.
    var entityTypeName: String { get }
    /// Reads one entity of the set's type from a payload.
    /// - Parameter bytes: the payload.
    /// - Returns: the entity.
    /// - Throws: ``DataServiceError``.
    func decodeEntity(_ bytes: Data) throws(DataServiceError) -> any EntityValue
}

/// An entity set whose entities are of type `E`: generated services declare one per set
/// (`NorthwindService.customers`).
public struct EntitySet<E: EntityValue>: EntitySetProtocol {
    /// The set's name (`Customers`).
    public let name: String

    /// The set named `name`.
    /// - Parameter name: the name as the service's container declares it.
    public init(_ name: String) { self.name = name }

    /// `E`'s qualified type name.
    public var entityTypeName: String { E.odataTypeName }

    /// Reads one entity of type `E`, remembering this set in its metadata.
    /// - Parameter bytes: the payload.
    /// - Returns: the entity.
    /// - Throws: ``DataServiceError``.
    public func decodeEntity(_ bytes: Data) throws(DataServiceError) -> any EntityValue {
        var entity = try E.decode(bytes)
        entity.odata.entitySet = name
        return entity
    }
}

