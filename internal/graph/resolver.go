package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/soakd/soakd/internal/donut"
)

// resolver implements the generated ResolverRoot over a donut.Service. It is
// deliberately thin: the domain work lives in donut.Service so that the REST
// control group does exactly the same work per request.
type resolver struct {
	svc *donut.Service

	// testHook, when set by a test before serving, runs at the start of every
	// Query.donut resolution; tests use it to inject a panic. It is never set
	// outside tests.
	testHook func()
}

var (
	_ ResolverRoot         = (*resolver)(nil)
	_ QueryResolver        = (*queryResolver)(nil)
	_ MutationResolver     = (*mutationResolver)(nil)
	_ SubscriptionResolver = (*subscriptionResolver)(nil)
)

type (
	queryResolver        struct{ *resolver }
	mutationResolver     struct{ *resolver }
	subscriptionResolver struct{ *resolver }
)

// Query returns the resolver of the Query type.
func (r *resolver) Query() QueryResolver { return queryResolver{r} }

// Mutation returns the resolver of the Mutation type.
func (r *resolver) Mutation() MutationResolver { return mutationResolver{r} }

// Subscription returns the resolver of the Subscription type.
func (r *resolver) Subscription() SubscriptionResolver { return subscriptionResolver{r} }

// Donut returns the donut with the given id, or nil (GraphQL null, no error)
// when there is none.
func (r queryResolver) Donut(_ context.Context, id string) (*donut.Donut, error) {
	if r.testHook != nil {
		r.testHook()
	}
	d, ok := r.svc.Store.Get(id)
	if !ok {
		return nil, nil
	}
	return &d, nil
}

// Add returns x+y, or nil (GraphQL null) when either argument is null.
func (queryResolver) Add(_ context.Context, x, y *int) (*int, error) {
	if x == nil || y == nil {
		return nil, nil
	}
	sum := *x + *y
	return &sum, nil
}

// AddOrUpdateDonut validates d the same way the REST arm does (valid flavour,
// non-empty name, so both arms accept exactly the same donuts), then stores and
// publishes it through donut.Service.Update.
func (r mutationResolver) AddOrUpdateDonut(_ context.Context, d donut.Donut) (donut.Donut, error) {
	// The schema's enum already rejects unknown flavours during validation;
	// this check keeps the resolver safe if that ever changes.
	if !d.Flavor.Valid() {
		return donut.Donut{}, fmt.Errorf("invalid flavor %q", d.Flavor)
	}
	if d.Name == "" {
		return donut.Donut{}, errors.New("donut name must not be empty")
	}
	return r.svc.Update(d), nil
}

// OnDonutUpdated subscribes to the broker for the given id and hands the
// broker's channel straight to gqlgen, without a forwarding goroutine. The
// subscription is cancelled when the operation's context ends (client stop,
// connection close); cancelling closes the channel, which ends the stream.
func (r subscriptionResolver) OnDonutUpdated(ctx context.Context, id string) (<-chan donut.Donut, error) {
	events, cancel := r.svc.Broker.Subscribe(id)
	context.AfterFunc(ctx, cancel)
	return events, nil
}
