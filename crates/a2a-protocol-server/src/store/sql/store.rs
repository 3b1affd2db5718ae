//! The public store types over one driver's `SqlCore` ([`sql_store!`]).

/// Defines a store type over one driver's `SqlCore`: its constructors, and its
/// [`TaskStore`](crate::store::TaskStore), [`Coordination`](crate::store::Coordination) and
/// [`Retention`](crate::store::Retention) impls. The invoking module provides
/// `statements::SqlCore`, `connect(url, options)`, `notices(&SqlCore)` and `POLL_INTERVAL`.
macro_rules! sql_store {
    ($(#[$doc:meta])* $name:ident, pool: $pool:ty, url: $example:literal, doctest: $attr:literal, setup: $setup:literal) => {
        $(#[$doc])*
        ///
        #[doc = concat!("```", $attr)]
        #[doc = concat!("use a2a_protocol_server::store::{", stringify!($name), ", TaskStore};")]
        ///
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
        #[doc = $setup]
        #[doc = concat!("let store = ", stringify!($name), "::open(&url).await?;")]
        /// assert!(store.supports_idempotency());
        /// # Ok(())
        /// # }
        /// ```
        pub struct $name {
            core: statements::SqlCore,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("tenant_aware", &self.core.tenant_aware)
                    .finish_non_exhaustive()
            }
        }

        impl $name {
            #[doc = concat!("Opens the database at `url` (such as `", $example, "`) and applies migrations.")]
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            #[doc = concat!("let store = ", stringify!($name), "::open(&url).await?;")]
            /// # Ok(())
            /// # }
            /// ```
            pub async fn open(url: &str) -> Result<Self, crate::store::StoreError> {
                Self::open_with(url, &crate::store::SqlStoreOptions::default()).await
            }

            /// Like [`Self::open`], with settings: tenancy and connections.
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            /// let options = a2a_protocol_server::store::SqlStoreOptions::default()
            ///     .with_tenant_aware(true) // each tenant's tasks apart
            ///     .with_max_connections(4);
            #[doc = concat!("let store = ", stringify!($name), "::open_with(&url, &options).await?;")]
            /// # Ok(())
            /// # }
            /// ```
            pub async fn open_with(
                url: &str,
                options: &crate::store::SqlStoreOptions,
            ) -> Result<Self, crate::store::StoreError> {
                Ok(Self {
                    core: statements::SqlCore::new(
                        connect(url, options).await?,
                        options.tenant_aware,
                        options.busy_timeout,
                    )
                    .await?,
                })
            }

            /// Uses an existing pool and applies migrations.
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            #[doc = concat!("let first = ", stringify!($name), "::open(&url).await?;")]
            #[doc = concat!("let shared = ", stringify!($name), "::from_pool(first.pool().clone()).await?;")]
            /// # Ok(())
            /// # }
            /// ```
            pub async fn from_pool(pool: $pool) -> Result<Self, crate::store::StoreError> {
                Self::from_pool_with(pool, &crate::store::SqlStoreOptions::default()).await
            }

            /// Like [`Self::from_pool`], with settings (those of connections are the pool's
            /// own, and not read).
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::{", stringify!($name), ", SqlStoreOptions};")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            /// let tenanted = SqlStoreOptions::default().with_tenant_aware(true);
            #[doc = concat!("let first = ", stringify!($name), "::open_with(&url, &tenanted).await?;")]
            #[doc = concat!("let shared = ", stringify!($name), "::from_pool_with(first.pool().clone(), &tenanted).await?;")]
            /// assert!(shared.is_tenant_aware());
            /// # Ok(())
            /// # }
            /// ```
            pub async fn from_pool_with(
                pool: $pool,
                options: &crate::store::SqlStoreOptions,
            ) -> Result<Self, crate::store::StoreError> {
                Ok(Self {
                    core: statements::SqlCore::new(pool, options.tenant_aware, options.busy_timeout)
                        .await?,
                })
            }

            /// Whether each tenant's tasks are kept apart ([`SqlStoreOptions::tenant_aware`]).
            ///
            /// [`SqlStoreOptions::tenant_aware`]: crate::store::SqlStoreOptions::tenant_aware
            pub fn is_tenant_aware(&self) -> bool {
                self.core.tenant_aware
            }

            /// The pool.
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            #[doc = concat!("let store = ", stringify!($name), "::open(&url).await?;")]
            /// assert!(!store.pool().is_closed());
            /// # Ok(())
            /// # }
            /// ```
            pub fn pool(&self) -> &$pool {
                &self.core.pool
            }
        }

        #[async_trait::async_trait]
        impl crate::store::TaskStore for $name {
            async fn load(
                &self,
                tenant: &str,
                id: &a2a_protocol_types::TaskId,
                known: Option<u64>,
            ) -> Result<crate::store::Loaded, crate::store::StoreError> {
                self.core.load(tenant, id, known).await
            }

            async fn list(
                &self,
                tenant: &str,
                query: &crate::store::TaskQuery,
            ) -> Result<crate::store::TaskPage, crate::store::StoreError> {
                self.core.list(tenant, query).await
            }

            async fn write(
                &self,
                write: &crate::store::TaskWrite<'_>,
            ) -> Result<crate::store::WriteOutcome, crate::store::StoreError> {
                self.core.write(write).await
            }

            fn supports_idempotency(&self) -> bool {
                true
            }

            async fn claim_idempotency_key(
                &self,
                claim: &crate::store::KeyClaim,
            ) -> Result<crate::store::ClaimOutcome, crate::store::StoreError> {
                self.core.claim(claim).await
            }

            async fn release_idempotency_key(
                &self,
                claim: &crate::store::KeyClaim,
            ) -> Result<(), crate::store::StoreError> {
                self.core.release(claim).await
            }

            async fn find_idempotency_key(
                &self,
                claim: &crate::store::KeyClaim,
            ) -> Result<Option<crate::store::ClaimOutcome>, crate::store::StoreError> {
                self.core.find_key(claim).await
            }

            fn capabilities(&self) -> crate::store::Capabilities<'_> {
                crate::store::Capabilities::default()
                    .with_coordination(self)
                    .with_push(self)
            }
        }

        #[async_trait::async_trait]
        impl crate::store::PushStore for $name {
            async fn save_push_config(
                &self,
                tenant: &str,
                config: &a2a_protocol_types::push::TaskPushNotificationConfig,
                max_per_task: usize,
            ) -> Result<crate::store::PushConfigSaved, crate::store::StoreError> {
                self.core.save_push_config(tenant, config, max_per_task).await
            }

            async fn get_push_config(
                &self,
                tenant: &str,
                task_id: &a2a_protocol_types::TaskId,
                id: &str,
            ) -> Result<Option<a2a_protocol_types::push::TaskPushNotificationConfig>, crate::store::StoreError> {
                self.core.get_push_config(tenant, task_id, id).await
            }

            async fn list_push_configs(
                &self,
                tenant: &str,
                task_id: &a2a_protocol_types::TaskId,
                after: Option<&str>,
                limit: usize,
            ) -> Result<Vec<a2a_protocol_types::push::TaskPushNotificationConfig>, crate::store::StoreError> {
                self.core.list_push_configs(tenant, task_id, after, limit).await
            }

            async fn delete_push_config(
                &self,
                tenant: &str,
                task_id: &a2a_protocol_types::TaskId,
                id: &str,
            ) -> Result<bool, crate::store::StoreError> {
                self.core.delete_push_config(tenant, task_id, id).await
            }

            async fn claim_push_deliveries(
                &self,
                claimant: &str,
                lease: std::time::Duration,
                limit: usize,
            ) -> Result<Vec<crate::store::PushDelivery>, crate::store::StoreError> {
                self.core.claim_push_deliveries(claimant, lease, limit).await
            }

            async fn settle_push_delivery(
                &self,
                claimant: &str,
                delivery: &crate::store::PushDelivery,
                settled: &crate::store::DeliverySettled,
            ) -> Result<(), crate::store::StoreError> {
                self.core.settle_push_delivery(claimant, delivery, settled).await
            }

            async fn dead_push_deliveries(
                &self,
                limit: usize,
            ) -> Result<Vec<crate::store::PushDelivery>, crate::store::StoreError> {
                self.core.dead_push_deliveries(limit).await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::Coordination for $name {
            async fn heartbeat(
                &self,
                owner: &str,
                ttl: std::time::Duration,
            ) -> Result<(), crate::store::StoreError> {
                self.core.heartbeat(owner, ttl).await
            }

            async fn retire(&self, owner: &str) -> Result<(), crate::store::StoreError> {
                self.core.retire(owner).await
            }

            async fn orphaned_turns(
                &self,
                limit: usize,
            ) -> Result<Vec<crate::store::TaskRef>, crate::store::StoreError> {
                self.core.orphaned_turns(limit).await
            }

            async fn request_cancel(
                &self,
                task: &crate::store::TaskRef,
            ) -> Result<(), crate::store::StoreError> {
                self.core.request_cancel(task).await
            }

            async fn cancel_requests(
                &self,
                owner: &str,
            ) -> Result<Vec<crate::store::TaskRef>, crate::store::StoreError> {
                self.core.cancel_requests(owner).await
            }

            async fn grant_lease(
                &self,
                task: &crate::store::TaskRef,
                ttl: std::time::Duration,
            ) -> Result<(), crate::store::StoreError> {
                self.core.grant_lease(task, ttl).await
            }

            async fn renew_lease(
                &self,
                task: &crate::store::TaskRef,
            ) -> Result<bool, crate::store::StoreError> {
                self.core.renew_lease(task).await
            }

            async fn take_lapsed_leases(
                &self,
                limit: usize,
            ) -> Result<Vec<crate::store::TaskRef>, crate::store::StoreError> {
                self.core.take_lapsed_leases(limit).await
            }

            async fn follow(
                &self,
                task: &crate::store::TaskRef,
                process: &str,
                ttl: std::time::Duration,
            ) -> Result<(), crate::store::StoreError> {
                self.core.follow(task, process, ttl).await
            }

            async fn events_after(
                &self,
                task: &crate::store::TaskRef,
                generation: u64,
            ) -> Result<Vec<a2a_protocol_types::StreamResponse>, crate::store::StoreError> {
                self.core.events_after(task, generation).await
            }

            fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<crate::store::Notice>> {
                notices(&self.core)
            }

            fn poll_interval(&self) -> std::time::Duration {
                POLL_INTERVAL
            }
        }

        #[async_trait::async_trait]
        impl crate::store::Retention for $name {
            async fn purge_expired(
                &self,
                policy: &crate::store::RetentionPolicy,
            ) -> Result<crate::store::PurgeReport, crate::store::StoreError> {
                self.core.purge(policy).await
            }
        }
    };
}

pub(crate) use sql_store;
