// Code generated from magnum 23.0.0's magnum/common/exception.py, with the classes only 15.0.1 has, by hack/gen-exceptions.py; DO NOT EDIT.

package exception

// The classes of magnum.common.exception: Magnum 23.0.0's, then
// the classes of 15.0.1 that 23.0.0 dropped. A class is
// named by its constant, so a misspelt class does not compile.
const (
	ClassMagnumException Class = iota
	ClassAuthorizationFailure
	ClassCertificateStorageException
	ClassCertificatesToClusterFailed
	ClassConflict
	ClassGetClusterSizeFailed
	ClassGetDiscoveryUrlFailed
	ClassInvalid
	ClassNotAuthorized
	ClassNotSupported
	ClassObjectError
	ClassObjectNotFound
	ClassRegionsListFailed
	ClassServicesListFailed
	ClassApiVersionsIntersect
	ClassCertificateValidationError
	ClassClusterAPIAddressUnavailable
	ClassClusterAlreadyExists
	ClassClusterDriverNotSupported
	ClassClusterTemplateAlreadyExists
	ClassClusterTemplatePublishDenied
	ClassClusterTemplateReferenced
	ClassClusterTypeBetaNotEnabled
	ClassClusterTypeNotSupported
	ClassClusterUpgradeNotSupported
	ClassConfigInvalid
	ClassCreateMasterNodeGroup
	ClassDeletingDefaultNGNotSupported
	ClassFederationAlreadyExists
	ClassFlavorZeroRootVolumeNotSupported
	ClassImageNotAuthorized
	ClassInvalidClusterDiscoveryURL
	ClassInvalidClusterSize
	ClassInvalidClusterTemplateForUpgrade
	ClassInvalidCsr
	ClassInvalidDNS
	ClassInvalidDiscoveryURL
	ClassInvalidIdentity
	ClassInvalidMAC
	ClassInvalidName
	ClassInvalidParameterValue
	ClassInvalidSubnet
	ClassInvalidUUID
	ClassInvalidVersion
	ClassMagnumServiceAlreadyExists
	ClassMasterNGResizeNotSupported
	ClassMemberAlreadyExists
	ClassNGResizeOutBounds
	ClassNgOperationInProgress
	ClassNodeGroupAlreadyExists
	ClassNodeGroupInvalidInput
	ClassOperationInProgress
	ClassPatchError
	ClassPolicyNotAuthorized
	ClassPreDeletionFailed
	ClassProjectNotFound
	ClassQuotaAlreadyExists
	ClassRequiredParameterNotProvided
	ClassResourceLimitExceeded
	ClassResourceNotFound
	ClassUnsupportedK8sQuantityFormat
	ClassX509KeyPairAlreadyExists
	ClassZeroNodeCountNotSupported
	ClassClusterNotFound
	ClassClusterTemplateNotFound
	ClassExternalNetworkNotFound
	ClassFederationNotFound
	ClassFixedNetworkNotFound
	ClassFixedSubnetNotFound
	ClassFlavorNotFound
	ClassHTTPNotFound
	ClassImageNotFound
	ClassKeyPairNotFound
	ClassMagnumServiceNotFound
	ClassMasterNGSizeInvalid
	ClassNodeGroupNotFound
	ClassOSDistroFieldNotFound
	ClassQuotaNotFound
	ClassVolumeTypeNotFound
	ClassX509KeyPairNotFound
	// Only in 15.0.1.
	ClassTrustCreateFailed
	ClassTrustDeleteFailed
	ClassTrusteeCreateFailed
	ClassTrusteeDeleteFailed
	ClassTrusteeOrTrustToClusterFailed
	ClassUnsupportedDockerQuantityFormat

	numClasses // the number of classes, not a class
)

// catalogue is every class's name, parent, HTTP code and message format
// (Python %-style).
var catalogue = [numClasses]classInfo{
	ClassMagnumException:                  {Name: "MagnumException", Parent: "", Code: 500, Format: "An unknown exception occurred."},
	ClassAuthorizationFailure:             {Name: "AuthorizationFailure", Parent: "MagnumException", Code: 403, Format: "%(client)s connection failed. %(message)s"},
	ClassCertificateStorageException:      {Name: "CertificateStorageException", Parent: "MagnumException", Code: 500, Format: "Could not store certificate: %(msg)s"},
	ClassCertificatesToClusterFailed:      {Name: "CertificatesToClusterFailed", Parent: "MagnumException", Code: 500, Format: "Failed to create certificates for Cluster: %(cluster_uuid)s"},
	ClassConflict:                         {Name: "Conflict", Parent: "MagnumException", Code: 409, Format: "Conflict."},
	ClassGetClusterSizeFailed:             {Name: "GetClusterSizeFailed", Parent: "MagnumException", Code: 500, Format: "Failed to get the size of cluster from '%(discovery_url)s'."},
	ClassGetDiscoveryUrlFailed:            {Name: "GetDiscoveryUrlFailed", Parent: "MagnumException", Code: 500, Format: "Failed to get discovery url from '%(discovery_endpoint)s'."},
	ClassInvalid:                          {Name: "Invalid", Parent: "MagnumException", Code: 400, Format: "Unacceptable parameters."},
	ClassNotAuthorized:                    {Name: "NotAuthorized", Parent: "MagnumException", Code: 403, Format: "Not authorized."},
	ClassNotSupported:                     {Name: "NotSupported", Parent: "MagnumException", Code: 400, Format: "%(operation)s is not supported."},
	ClassObjectError:                      {Name: "ObjectError", Parent: "MagnumException", Code: 500, Format: "Failed to perform action %{action}s on %{obj_name}s with uuid %{obj_id}s: %{reason}s"},
	ClassObjectNotFound:                   {Name: "ObjectNotFound", Parent: "MagnumException", Code: 404, Format: "The %(name)s %(id)s could not be found."},
	ClassRegionsListFailed:                {Name: "RegionsListFailed", Parent: "MagnumException", Code: 500, Format: "Failed to list regions."},
	ClassServicesListFailed:               {Name: "ServicesListFailed", Parent: "MagnumException", Code: 500, Format: "Failed to list services."},
	ClassApiVersionsIntersect:             {Name: "ApiVersionsIntersect", Parent: "Invalid", Code: 400, Format: "Version of %(name)s %(min_ver)s %(max_ver)s intersects with another versions."},
	ClassCertificateValidationError:       {Name: "CertificateValidationError", Parent: "Invalid", Code: 400, Format: "Extension '%(extension)s' not allowed"},
	ClassClusterAPIAddressUnavailable:     {Name: "ClusterAPIAddressUnavailable", Parent: "Conflict", Code: 409, Format: "Cluster API address is not available yet"},
	ClassClusterAlreadyExists:             {Name: "ClusterAlreadyExists", Parent: "Conflict", Code: 409, Format: "A cluster with UUID %(uuid)s already exists."},
	ClassClusterDriverNotSupported:        {Name: "ClusterDriverNotSupported", Parent: "NotSupported", Code: 400, Format: "Cluster driver (%(driver_name)s) not supported."},
	ClassClusterTemplateAlreadyExists:     {Name: "ClusterTemplateAlreadyExists", Parent: "Conflict", Code: 409, Format: "A ClusterTemplate with UUID %(uuid)s already exists."},
	ClassClusterTemplatePublishDenied:     {Name: "ClusterTemplatePublishDenied", Parent: "NotAuthorized", Code: 403, Format: "Not authorized to set public or hidden flag for cluster template."},
	ClassClusterTemplateReferenced:        {Name: "ClusterTemplateReferenced", Parent: "Invalid", Code: 400, Format: "ClusterTemplate %(clustertemplate)s is referenced by one or multiple clusters."},
	ClassClusterTypeBetaNotEnabled:        {Name: "ClusterTypeBetaNotEnabled", Parent: "NotSupported", Code: 400, Format: "Cluster type (%(server_type)s, %(os)s, %(coe)s) is provided by the '%(driver_name)s' driver, which is a beta driver and is not enabled. Add '%(driver_name)s' to the [drivers]/enabled_beta_drivers configuration option to use it."},
	ClassClusterTypeNotSupported:          {Name: "ClusterTypeNotSupported", Parent: "NotSupported", Code: 400, Format: "Cluster type (%(server_type)s, %(os)s, %(coe)s) is not supported by any loaded cluster driver. Loaded drivers support: %(supported_cluster_types)s."},
	ClassClusterUpgradeNotSupported:       {Name: "ClusterUpgradeNotSupported", Parent: "NotSupported", Code: 400, Format: "Cluster upgrade is not supported in the provided microversion."},
	ClassConfigInvalid:                    {Name: "ConfigInvalid", Parent: "Invalid", Code: 400, Format: "Invalid configuration file. %(error_msg)s"},
	ClassCreateMasterNodeGroup:            {Name: "CreateMasterNodeGroup", Parent: "NotSupported", Code: 400, Format: "Creating master nodegroups is currently not supported."},
	ClassDeletingDefaultNGNotSupported:    {Name: "DeletingDefaultNGNotSupported", Parent: "NotSupported", Code: 400, Format: "Deleting a default nodegroup is not supported."},
	ClassFederationAlreadyExists:          {Name: "FederationAlreadyExists", Parent: "Conflict", Code: 409, Format: "A federation with UUID %(uuid)s already exists."},
	ClassFlavorZeroRootVolumeNotSupported: {Name: "FlavorZeroRootVolumeNotSupported", Parent: "NotSupported", Code: 400, Format: "Flavor with zero root volume size is not supported when boot_volume_size is zero."},
	ClassImageNotAuthorized:               {Name: "ImageNotAuthorized", Parent: "NotAuthorized", Code: 403, Format: "Not authorized for image %(image_id)s."},
	ClassInvalidClusterDiscoveryURL:       {Name: "InvalidClusterDiscoveryURL", Parent: "Invalid", Code: 400, Format: "Invalid discovery URL '%(discovery_url)s'."},
	ClassInvalidClusterSize:               {Name: "InvalidClusterSize", Parent: "Invalid", Code: 400, Format: "Expected cluster size %(expect_size)d but get cluster size %(size)d from '%(discovery_url)s'."},
	ClassInvalidClusterTemplateForUpgrade: {Name: "InvalidClusterTemplateForUpgrade", Parent: "Conflict", Code: 409, Format: "Cluster Template is not valid for upgrade: %(reason)s"},
	ClassInvalidCsr:                       {Name: "InvalidCsr", Parent: "Invalid", Code: 400, Format: "Received invalid csr %(csr)s."},
	ClassInvalidDNS:                       {Name: "InvalidDNS", Parent: "Invalid", Code: 400, Format: "Expected a single dns address or comma separated dns list, but received %(dns)s."},
	ClassInvalidDiscoveryURL:              {Name: "InvalidDiscoveryURL", Parent: "Invalid", Code: 400, Format: "Received invalid discovery URL '%(discovery_url)s' for discovery endpoint '%(discovery_endpoint)s'."},
	ClassInvalidIdentity:                  {Name: "InvalidIdentity", Parent: "Invalid", Code: 400, Format: "Expected an uuid or int but received %(identity)s."},
	ClassInvalidMAC:                       {Name: "InvalidMAC", Parent: "Invalid", Code: 400, Format: "Expected a MAC address but received %(mac)s."},
	ClassInvalidName:                      {Name: "InvalidName", Parent: "Invalid", Code: 400, Format: "Expected a name but received %(name)s."},
	ClassInvalidParameterValue:            {Name: "InvalidParameterValue", Parent: "Invalid", Code: 400, Format: "%(err)s"},
	ClassInvalidSubnet:                    {Name: "InvalidSubnet", Parent: "Invalid", Code: 400, Format: "Received invalid subnet %(subnet)s."},
	ClassInvalidUUID:                      {Name: "InvalidUUID", Parent: "Invalid", Code: 400, Format: "Expected a uuid but received %(uuid)s."},
	ClassInvalidVersion:                   {Name: "InvalidVersion", Parent: "Invalid", Code: 400, Format: "Received invalid tag for %(tag)s."},
	ClassMagnumServiceAlreadyExists:       {Name: "MagnumServiceAlreadyExists", Parent: "Conflict", Code: 409, Format: "A magnum service with ID %(id)s already exists."},
	ClassMasterNGResizeNotSupported:       {Name: "MasterNGResizeNotSupported", Parent: "NotSupported", Code: 400, Format: "Resizing the master nodegroup is not supported by this driver."},
	ClassMemberAlreadyExists:              {Name: "MemberAlreadyExists", Parent: "Conflict", Code: 409, Format: "A cluster with UUID %(uuid)s is already a member of the federation %(federation_name)s."},
	ClassNGResizeOutBounds:                {Name: "NGResizeOutBounds", Parent: "Invalid", Code: 400, Format: "Resizing %(nodegroup)s outside the allowed range: min_node_count = %(min_nc)s, max_node_count = %(max_nc)s"},
	ClassNgOperationInProgress:            {Name: "NgOperationInProgress", Parent: "Invalid", Code: 400, Format: "Nodegroup %(nodegroup)s already has an operation in progress."},
	ClassNodeGroupAlreadyExists:           {Name: "NodeGroupAlreadyExists", Parent: "Conflict", Code: 409, Format: "A node group with name %(name)s already exists in the cluster %(cluster_id)s."},
	ClassNodeGroupInvalidInput:            {Name: "NodeGroupInvalidInput", Parent: "Conflict", Code: 409, Format: "%(attr)s for %(nodegroup)s is invalid (%(expl)s)."},
	ClassOperationInProgress:              {Name: "OperationInProgress", Parent: "Invalid", Code: 400, Format: "Cluster %(cluster_name)s already has an operation in progress."},
	ClassPatchError:                       {Name: "PatchError", Parent: "Invalid", Code: 400, Format: "Couldn't apply patch '%(patch)s'. Reason: %(reason)s"},
	ClassPolicyNotAuthorized:              {Name: "PolicyNotAuthorized", Parent: "NotAuthorized", Code: 403, Format: "Policy doesn't allow %(action)s to be performed."},
	ClassPreDeletionFailed:                {Name: "PreDeletionFailed", Parent: "Conflict", Code: 409, Format: "Failed to pre-delete resources for cluster %(cluster_uuid)s, error: %(msg)s."},
	ClassProjectNotFound:                  {Name: "ProjectNotFound", Parent: "ObjectNotFound", Code: 404, Format: "The %(name)s %(id)s could not be found."},
	ClassQuotaAlreadyExists:               {Name: "QuotaAlreadyExists", Parent: "Conflict", Code: 409, Format: "Quota for project %(project_id)s already exists for resource %(resource)s."},
	ClassRequiredParameterNotProvided:     {Name: "RequiredParameterNotProvided", Parent: "Invalid", Code: 400, Format: "Required parameter %(heat_param)s not provided."},
	ClassResourceLimitExceeded:            {Name: "ResourceLimitExceeded", Parent: "NotAuthorized", Code: 403, Format: "Resource limit exceeded: %(msg)s"},
	ClassResourceNotFound:                 {Name: "ResourceNotFound", Parent: "ObjectNotFound", Code: 404, Format: "The %(name)s resource %(id)s could not be found."},
	ClassUnsupportedK8sQuantityFormat:     {Name: "UnsupportedK8sQuantityFormat", Parent: "Invalid", Code: 400, Format: "Unsupported quantity format for k8s cluster."},
	ClassX509KeyPairAlreadyExists:         {Name: "X509KeyPairAlreadyExists", Parent: "Conflict", Code: 409, Format: "A key pair with UUID %(uuid)s already exists."},
	ClassZeroNodeCountNotSupported:        {Name: "ZeroNodeCountNotSupported", Parent: "NotSupported", Code: 400, Format: "Resizing a nodegroup to zero is not supported in the provided microversion."},
	ClassClusterNotFound:                  {Name: "ClusterNotFound", Parent: "ResourceNotFound", Code: 404, Format: "Cluster %(cluster)s could not be found."},
	ClassClusterTemplateNotFound:          {Name: "ClusterTemplateNotFound", Parent: "ResourceNotFound", Code: 404, Format: "ClusterTemplate %(clustertemplate)s could not be found."},
	ClassExternalNetworkNotFound:          {Name: "ExternalNetworkNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Unable to find external network %(network)s."},
	ClassFederationNotFound:               {Name: "FederationNotFound", Parent: "ResourceNotFound", Code: 404, Format: "Federation %(federation)s could not be found."},
	ClassFixedNetworkNotFound:             {Name: "FixedNetworkNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Unable to find fixed network %(network)s."},
	ClassFixedSubnetNotFound:              {Name: "FixedSubnetNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Unable to find fixed subnet %(subnet)s."},
	ClassFlavorNotFound:                   {Name: "FlavorNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Unable to find flavor %(flavor)s."},
	ClassHTTPNotFound:                     {Name: "HTTPNotFound", Parent: "ResourceNotFound", Code: 404, Format: "The %(name)s resource %(id)s could not be found."},
	ClassImageNotFound:                    {Name: "ImageNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Image %(image_id)s could not be found."},
	ClassKeyPairNotFound:                  {Name: "KeyPairNotFound", Parent: "ResourceNotFound", Code: 404, Format: "Unable to find keypair %(keypair)s."},
	ClassMagnumServiceNotFound:            {Name: "MagnumServiceNotFound", Parent: "ResourceNotFound", Code: 404, Format: "A magnum service %(magnum_service_id)s could not be found."},
	ClassMasterNGSizeInvalid:              {Name: "MasterNGSizeInvalid", Parent: "InvalidParameterValue", Code: 400, Format: "master nodegroup size of %(requested_size)s is invalid, size cannot be an even number."},
	ClassNodeGroupNotFound:                {Name: "NodeGroupNotFound", Parent: "ResourceNotFound", Code: 404, Format: "Nodegroup %(nodegroup)s could not be found."},
	ClassOSDistroFieldNotFound:            {Name: "OSDistroFieldNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Image %(image_id)s doesn't contain os_distro field."},
	ClassQuotaNotFound:                    {Name: "QuotaNotFound", Parent: "ResourceNotFound", Code: 404, Format: "Quota could not be found: %(msg)s"},
	ClassVolumeTypeNotFound:               {Name: "VolumeTypeNotFound", Parent: "ResourceNotFound", Code: 400, Format: "Valid volume type could not be found."},
	ClassX509KeyPairNotFound:              {Name: "X509KeyPairNotFound", Parent: "ResourceNotFound", Code: 404, Format: "A key pair %(x509keypair)s could not be found."},
	ClassTrustCreateFailed:                {Name: "TrustCreateFailed", Parent: "MagnumException", Code: 500, Format: "Failed to create trust for trustee %(trustee_user_id)s.", Until: "23.0.0"},
	ClassTrustDeleteFailed:                {Name: "TrustDeleteFailed", Parent: "MagnumException", Code: 500, Format: "Failed to delete trust %(trust_id)s.", Until: "23.0.0"},
	ClassTrusteeCreateFailed:              {Name: "TrusteeCreateFailed", Parent: "MagnumException", Code: 500, Format: "Failed to create trustee %(username)s in domain %(domain_id)s", Until: "23.0.0"},
	ClassTrusteeDeleteFailed:              {Name: "TrusteeDeleteFailed", Parent: "MagnumException", Code: 500, Format: "Failed to delete trustee %(trustee_id)s", Until: "23.0.0"},
	ClassTrusteeOrTrustToClusterFailed:    {Name: "TrusteeOrTrustToClusterFailed", Parent: "MagnumException", Code: 500, Format: "Failed to create trustee or trust for Cluster: %(cluster_uuid)s", Until: "23.0.0"},
	ClassUnsupportedDockerQuantityFormat:  {Name: "UnsupportedDockerQuantityFormat", Parent: "Invalid", Code: 400, Format: "Unsupported quantity format for Swarm cluster.", Until: "23.0.0"},
}
